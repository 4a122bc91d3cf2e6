"""The journal in the database's own tables (``match_setups``, ``match_inputs``): the
journal of a server on PostgreSQL (``server.db.journal``).

Appends go through the writer thread, grouped: the inputs of every match that came
while one commit ran go in one transaction after it. On a PostgreSQL database that
many hosts share, each setup names the host that runs the match
(``match_setups.host``), and a host resumes its own matches only.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Collection, Sequence
from typing import Any

import structlog

from .connection import (
    POSTGRESQL,
    Connection,
    PostgresError,
    StorageError,
    among,
    connect,
    dialect,
    transaction,
)
from .journal import Journal
from .writer import Writer

log = structlog.get_logger()


class TableJournal(Journal):
    """The journal in the database's tables, written on ``writer``'s thread through a
    connection of its own that only that thread uses."""

    def __init__(self, target: str, host_id: str, reads: Connection, writer: Writer) -> None:
        super().__init__()
        self.host_id = host_id
        self._reads = reads
        self._writer = writer
        self._db = connect(target, durable=False)
        self._pending: list[tuple[str, int, str, asyncio.Future[None]]] = []
        self._setups: list[tuple[str, str]] = []
        self._flushing = False
        self._flusher: asyncio.Future[None] | None = None

    def close(self) -> None:
        self._db.close()

    def _held(
        self, only: Collection[str] | None = None
    ) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
        if only is None:
            setups = self._reads.execute(
                "SELECT match_id, setup FROM match_setups WHERE host = ?", (self.host_id,)
            ).fetchall()
        else:
            test, listed = among(self._reads, list(only))
            setups = self._reads.execute(
                f"SELECT match_id, setup FROM match_setups WHERE host = ? AND match_id {test}",
                (self.host_id, listed),
            ).fetchall()
        out = []
        for match_id, setup in setups:
            rows = self._reads.execute(
                "SELECT input FROM match_inputs WHERE match_id = ? ORDER BY n", (match_id,)
            ).fetchall()
            out.append((match_id, json.loads(setup), [json.loads(r[0]) for r in rows]))
        return out

    def _begin(self, match_id: str, setup: str) -> None:
        self._setups.append((match_id, setup))
        self._kick()

    def _append(self, match_id: str, n: int, step: str) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((match_id, n, step, done))
        self._kick()
        return done

    def _forget(self, match_id: str) -> None:
        self._writer.send(self._delete, match_id)

    def _kick(self) -> None:
        if not self._flushing:
            self._flushing = True
            self._flusher = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        try:
            while self._pending or self._setups:
                setups, self._setups = self._setups, []
                batch, self._pending = self._pending, []
                try:
                    refused = await self._writer.run(
                        self._commit, setups, [(m, n, text) for m, n, text, _ in batch]
                    )
                except (sqlite3.Error, PostgresError, OSError) as e:
                    log.error("journal_write_failed", error=str(e), inputs=len(batch))
                    for *_, done in batch:
                        if not done.done():
                            done.set_exception(StorageError(f"journal: {e}"))
                    continue
                if refused:
                    log.error(
                        "journal_write_refused",
                        matches=sorted(refused),
                        host=self.host_id,
                        reason="another host took these matches over",
                    )
                for match_id, _, _, done in batch:
                    if done.done():
                        continue
                    if match_id in refused:
                        done.set_exception(
                            StorageError(f"journal: match {match_id} is run by another host now")
                        )
                    else:
                        done.set_result(None)
        finally:
            self._flushing = False

    def _commit(
        self, setups: Sequence[tuple[str, str]], inputs: Sequence[tuple[str, int, str]]
    ) -> set[str]:
        """Returns the matches whose inputs were refused: their setup names another
        host now (see the module)."""
        with transaction(self._db) as db:
            if setups:
                db.executemany(
                    "INSERT INTO match_setups (match_id, setup, host) "
                    "VALUES (?, ?, ?) ON CONFLICT (match_id) DO UPDATE SET "
                    "setup = excluded.setup WHERE match_setups.host = excluded.host",
                    [(match_id, setup, self.host_id) for match_id, setup in setups],
                )
            if not inputs:
                return set()
            wanted = sorted({m for m, _, _ in inputs})
            test, listed = among(db, wanted)
            held = {
                r[0]
                for r in db.execute(
                    f"SELECT match_id FROM match_setups WHERE match_id {test} AND host = ?"
                    + (" FOR SHARE" if dialect(db) == POSTGRESQL else ""),
                    (listed, self.host_id),
                ).fetchall()
            }
            written = [step for step in inputs if step[0] in held]
            if written:
                db.executemany(
                    "INSERT INTO match_inputs (match_id, n, input) VALUES (?, ?, ?)"
                    " ON CONFLICT (match_id, n) DO UPDATE SET input = "
                    "excluded.input",
                    written,
                )
            return set(wanted) - held

    def _delete(self, match_id: str) -> None:
        with transaction(self._db) as db:
            db.execute("DELETE FROM match_inputs WHERE match_id = ?", (match_id,))
            db.execute("DELETE FROM match_setups WHERE match_id = ?", (match_id,))
