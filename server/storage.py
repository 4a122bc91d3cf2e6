"""The embedded database: one SQLite file (WAL) holding every match and its record.

A match row is written when the match is created (``waiting``), updated when it
starts (``running``) and once more when it ends (``finished`` or ``aborted``),
with its game record. The end is written in one transaction before the result is
announced to anyone, and only over a match that has not ended yet, so writing it
twice changes nothing. A server that starts finds the matches a crash cut off
(still ``waiting`` or ``running``) and marks them ``aborted``.

Other parts of the server (the ladder) keep their own tables in the same file:
they use ``Storage.db`` on the event-loop thread, or open their own connection
to ``Storage.path`` with ``connect``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger()

WAITING = "waiting"
RUNNING = "running"
FINISHED = "finished"
ABORTED = "aborted"
ENDED = (FINISHED, ABORTED)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS matches (
    id        TEXT PRIMARY KEY,
    status    TEXT NOT NULL CHECK (status IN ('waiting', 'running', 'finished', 'aborted')),
    players   INTEGER NOT NULL,
    names     TEXT NOT NULL,              -- JSON list, seat order
    ladder    INTEGER NOT NULL DEFAULT 0,
    created   TEXT NOT NULL,              -- ISO 8601, UTC
    ended     TEXT,
    winners   TEXT,                       -- JSON list of seats, once finished
    ranks     TEXT,                       -- JSON list per seat, once finished
    delivered TEXT,                       -- JSON list per seat, once finished
    reason    TEXT,                       -- why an aborted match was cut off
    record    TEXT                        -- the game record (RECORD.md) once ended
);
CREATE INDEX IF NOT EXISTS matches_created ON matches (created);
"""


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


class Storage:
    """The server's database. Methods run on the event-loop thread and are quick, except
    ``end_match``, which waits for the disk and may run in a worker thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        # Creating and starting a match need not wait for the disk (a match cut off
        # before its end is aborted anyway); its end is written durably, on its own
        # connection, usable from a worker thread.
        self.db = connect(self.path, durable=False)
        self.db.executescript(_SCHEMA)
        self._durable = connect(self.path, durable=True)

    def close(self) -> None:
        """Closes the connections."""
        self.db.close()
        self._durable.close()

    def connect(self) -> sqlite3.Connection:
        """Returns a new connection to the same file (for another thread or module)."""
        return connect(self.path)

    def abort_unfinished(self, reason: str) -> list[str]:
        """Returns the ids of matches left waiting or running, after marking them aborted."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            ids = [r[0] for r in self.db.execute(
                "SELECT id FROM matches WHERE status IN ('waiting', 'running')")]
            self.db.execute(
                "UPDATE matches SET status = 'aborted', ended = ?, reason = ? "
                "WHERE status IN ('waiting', 'running')", (now_iso(), reason))
        return ids

    def add_match(self, match_id: str, players: int, names: Sequence[str], ladder: bool,
                  created: str) -> None:
        """Stores a new match as waiting."""
        self.db.execute(
            "INSERT INTO matches (id, status, players, names, ladder, created) "
            "VALUES (?, 'waiting', ?, ?, ?, ?)",
            (match_id, players, json.dumps(list(names)), int(ladder), created))

    def set_running(self, match_id: str) -> None:
        """Marks a waiting match as running."""
        self.db.execute("UPDATE matches SET status = 'running' WHERE id = ? AND status = 'waiting'",
                        (match_id,))

    def set_names(self, match_id: str, names: Sequence[str]) -> None:
        """Stores the seat names of a match that has not ended."""
        self.db.execute("UPDATE matches SET names = ? WHERE id = ? AND status IN "
                        "('waiting', 'running')", (json.dumps(list(names)), match_id))

    def end_match(self, match_id: str, status: str, record: str, *,
                  winners: Sequence[int] = (), ranks: Sequence[int] = (),
                  delivered: Sequence[int] = (), reason: str | None = None) -> bool:
        """Returns whether this call ended the match, storing its status and record.

        A match that has already ended is left as it is, so a second call is harmless.
        """
        if status not in ENDED:
            raise ValueError(f"an ended match is 'finished' or 'aborted', got {status!r}")
        cur = self._durable.execute(
            "UPDATE matches SET status = ?, ended = ?, winners = ?, ranks = ?, delivered = ?, "
            "reason = ?, record = ? WHERE id = ? AND status IN ('waiting', 'running')",
            (status, now_iso(), json.dumps(list(winners)), json.dumps(list(ranks)),
             json.dumps(list(delivered)), reason, record, match_id))
        return cur.rowcount == 1

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
