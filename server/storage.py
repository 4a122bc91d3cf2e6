"""The embedded database: one SQLite file (WAL) holding every match and its record.

A match row is written when the match is created (``waiting``), updated when it
starts (``running``) and once more when it ends (``finished`` or ``aborted``),
with its game record. The end is written durably, in one statement, before the
result is announced to anyone, and only over a match that has not ended yet, so
writing it twice changes nothing. A server that starts finds the matches a crash
cut off (still ``waiting`` or ``running``) and marks them ``aborted``.

Writes never wait for the disk on the event loop: they run on one writer thread
(:class:`Writer`), one at a time in the order they were given. Creating,
starting and naming a match are queued without waiting; ending it is awaited.
Each write is one transaction, so a crash leaves none half-written, and
:meth:`Storage.close` runs every write still queued before it closes.

Other parts of the server (the ladder) keep their own tables in the same file,
through their own connections to ``Storage.path`` (``connect``).
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import json
import sqlite3
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, ParamSpec, TypeVar

import structlog

from . import schema

log = structlog.get_logger()

WAITING = "waiting"
RUNNING = "running"
FINISHED = "finished"
ABORTED = "aborted"
ENDED = (FINISHED, ABORTED)

class StorageError(RuntimeError):
    """The database could not store a write (the message says why)."""


_END_MATCH = (
    "INSERT INTO matches (id, status, players, names, ladder, created, ended, "
    "winners, ranks, delivered, reason, record) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET status = excluded.status, names = excluded.names, "
    "ended = excluded.ended, winners = excluded.winners, ranks = excluded.ranks, "
    "delivered = excluded.delivered, reason = excluded.reason, "
    "record = excluded.record WHERE matches.status IN ('waiting', 'running')")


def now_iso() -> str:
    """Returns the current UTC time as ISO 8601 text with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def connect(path: str | Path, durable: bool = True) -> sqlite3.Connection:
    """Returns a connection to the database file in WAL mode, in autocommit mode.

    A ``durable`` connection syncs every commit to disk (it survives a power cut);
    otherwise commits survive a crash of the process but may be lost with the power.
    """
    db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
    db.execute("PRAGMA busy_timeout=5000")
    db.execute("PRAGMA foreign_keys=ON")
    return db


@dataclass(frozen=True, slots=True)
class MatchRow:
    """One stored match, as listed."""

    id: str
    status: str
    players: int
    names: tuple[str, ...]
    ladder: bool
    created: str
    ended: str | None
    winners: tuple[int, ...]
    ranks: tuple[int, ...]
    delivered: tuple[int, ...]
    reason: str | None


def _row(r: sqlite3.Row) -> MatchRow:
    return MatchRow(id=r["id"], status=r["status"], players=r["players"],
                    names=tuple(json.loads(r["names"])), ladder=bool(r["ladder"]),
                    created=r["created"], ended=r["ended"],
                    winners=tuple(json.loads(r["winners"] or "[]")),
                    ranks=tuple(json.loads(r["ranks"] or "[]")),
                    delivered=tuple(json.loads(r["delivered"] or "[]")),
                    reason=r["reason"])


P = ParamSpec("P")
T = TypeVar("T")


class Writer:
    """One thread that runs database writes one at a time, in the order given.

    The event loop hands writes over and never waits for the disk itself; with a
    single writer thread the writes of one module never compete for SQLite's
    write lock, and a later write cannot overtake an earlier one.
    """

    def __init__(self, name: str = "db-writer") -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.failing = False
        self._watchers: list[Callable[[bool], None]] = []

    def watch(self, changed: Callable[[bool], None]) -> None:
        """Calls ``changed(failing)`` on the writer thread each time writes start to
        fail (True) or succeed again (False)."""
        self._watchers.append(changed)

    def _watched(self, write: Callable[[], T]) -> T:
        try:
            result = write()
        except Exception:
            self._set_failing(True)
            raise
        self._set_failing(False)
        return result

    def _set_failing(self, failing: bool) -> None:
        if failing != self.failing:
            self.failing = failing
            for changed in self._watchers:
                changed(failing)

    async def run(self, write: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Returns what ``write(*args, **kwargs)`` returns (or raises what it raises),
        once it has run after every write given before it."""
        return await asyncio.wrap_future(self._pool.submit(
            self._watched, functools.partial(write, *args, **kwargs)))

    def send(self, write: Callable[P, object], *args: P.args, **kwargs: P.kwargs) -> None:
        """Queues ``write(*args, **kwargs)`` after every write given before it, without
        waiting for it; a failure is logged (and a later write may repair it)."""
        self._pool.submit(self._watched, functools.partial(write, *args, **kwargs)
                          ).add_done_callback(_log_failure)

    async def flush(self) -> None:
        """Returns once every write given so far has run."""
        await self.run(_nothing)

    def close(self) -> None:
        """Runs every write still queued, then stops the thread (waits for both)."""
        self._pool.shutdown(wait=True)


def _nothing() -> None:
    return None


def _log_failure(done: Future[object]) -> None:
    error = done.exception()
    if error is not None:
        log.error("database_write_failed", error=repr(error))


class Storage:
    """The server's database: reads on the event loop, writes on its :class:`Writer`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.writer = Writer()
        # Reads: on the event loop, quick (WAL: readers never wait for the writer).
        self.db = connect(self.path, durable=False)
        try:
            schema.upgrade(self.path)      # the tables: server/migrations, up to date
        except schema.SchemaError as e:
            raise StorageError(str(e)) from e
        # Writes, on the writer thread only. Creating and starting a match need not
        # wait for the disk (a match cut off before its end is aborted anyway); its
        # end is synced to disk before it is announced.
        self._quick = connect(self.path, durable=False)
        self._durable = connect(self.path, durable=True)
        self._claim: BinaryIO | None = None

    def close(self) -> None:
        """Runs every write still queued, then closes the connections (and gives up
        the claim on the file)."""
        self.writer.close()
        self.db.close()
        self._quick.close()
        self._durable.close()
        if self._claim is not None:
            self._claim.close()
            self._claim = None

    def check(self) -> None:
        """Raises StorageError when the file fails SQLite's quick integrity check."""
        try:
            rows = [r[0] for r in self.db.execute("PRAGMA quick_check")]
        except sqlite3.Error as e:
            raise StorageError(f"{self.path}: the database is damaged: {e}") from e
        if rows != ["ok"]:
            raise StorageError(f"{self.path}: the database is damaged: {rows[0]}")

    def claim(self) -> None:
        """Takes the file for this process alone; raises StorageError when another
        server holds it. Two servers on one file would abort each other's matches;
        the claim is an advisory lock the system drops when the process ends."""
        claim = open(self.path, "rb")      # noqa: SIM115 (held until close)
        try:
            fcntl.flock(claim.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            claim.close()
            raise StorageError(f"{self.path}: another server uses this database; stop it, "
                               f"or give this one another --db") from None
        self._claim = claim

    def connect(self) -> sqlite3.Connection:
        """Returns a new connection to the same file (for another thread or module)."""
        return connect(self.path)

    def abort_unfinished(self, reason: str, keep: Collection[str] = ()) -> list[str]:
        """Returns the ids of matches left waiting or running, after marking them aborted,
        except those in ``keep`` (the matches the server resumes).

        For start-up, before any match is created: it writes on the calling thread.
        """
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            ids = [r[0] for r in self.db.execute(
                "SELECT id FROM matches WHERE status IN ('waiting', 'running')")
                if r[0] not in keep]
            self.db.executemany(
                "UPDATE matches SET status = 'aborted', ended = ?, reason = ? WHERE id = ?",
                [(now_iso(), reason, match_id) for match_id in ids])
        return ids

    def add_match(self, match_id: str, players: int, names: Sequence[str], ladder: bool,
                  created: str) -> None:
        """Queues storing a new match as waiting (a second time changes nothing)."""
        self.writer.send(self._quick.execute,
                         "INSERT OR IGNORE INTO matches (id, status, players, names, ladder, "
                         "created) VALUES (?, 'waiting', ?, ?, ?, ?)",
                         (match_id, players, json.dumps(list(names)), int(ladder), created))

    def set_running(self, match_id: str) -> None:
        """Queues marking a waiting match as running."""
        self.writer.send(self._quick.execute,
                         "UPDATE matches SET status = 'running' WHERE id = ? AND status = "
                         "'waiting'", (match_id,))

    def set_names(self, match_id: str, names: Sequence[str]) -> None:
        """Queues storing the seat names of a match that has not ended."""
        self.writer.send(self._quick.execute,
                         "UPDATE matches SET names = ? WHERE id = ? AND status IN "
                         "('waiting', 'running')", (json.dumps(list(names)), match_id))

    async def end_match(self, match_id: str, status: str, record: str, *, players: int,
                        names: Sequence[str], ladder: bool, created: str,
                        winners: Sequence[int] = (), ranks: Sequence[int] = (),
                        delivered: Sequence[int] = (), reason: str | None = None) -> bool:
        """Returns whether this call ended the match, once its status and record are
        on disk; raises StorageError when they could not be stored.

        A match that has already ended is left as it is, so a second call is harmless.
        The whole row is written, so the end is stored even if an earlier queued write
        of the match failed.
        """
        if status not in ENDED:
            raise ValueError(f"an ended match is 'finished' or 'aborted', got {status!r}")
        try:
            cur = await self.writer.run(self._durable.execute, _END_MATCH, (
                match_id, status, players, json.dumps(list(names)), int(ladder), created,
                now_iso(), json.dumps(list(winners)), json.dumps(list(ranks)),
                json.dumps(list(delivered)), reason, record))
        except sqlite3.Error as e:
            raise StorageError(f"match {match_id}: its end was not stored: {e}") from e
        return bool(cur.rowcount == 1)

    def match(self, match_id: str) -> MatchRow | None:
        """Returns a stored match, or None when unknown."""
        r = self.db.execute("SELECT * FROM matches WHERE id = ?", (match_id,)).fetchone()
        return None if r is None else _row(r)

    def record(self, match_id: str) -> str | None:
        """Returns the stored game record of an ended match as JSON text, or None."""
        r = self.db.execute("SELECT record FROM matches WHERE id = ?", (match_id,)).fetchone()
        return None if r is None or r[0] is None else str(r[0])

    def matches(self, limit: int = 50) -> list[MatchRow]:
        """Returns up to ``limit`` matches, newest first."""
        rows = self.db.execute("SELECT * FROM matches ORDER BY created DESC, rowid DESC LIMIT ?",
                               (limit,))
        return [_row(r) for r in rows]

    def counts(self) -> dict[str, Any]:
        """Returns how many matches there are per status."""
        return {r[0]: r[1] for r in self.db.execute(
            "SELECT status, COUNT(*) FROM matches GROUP BY status")}
