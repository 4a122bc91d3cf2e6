"""A competition's tables, read and written (revision 0008; see ``server.competition``).

:class:`CompetitionStore` keeps one competition's phase stamps, its finals field,
its finals tables (duplicate sets: their seeds and commitments) and matches, its
final table and whether its results were released. Every method is one short
transaction; the server calls them on its competition's writer thread.

A finals match is seated through the ladder's lobby, so while it runs it has a
row in ``ladder_matches`` (the lobby tells its bots their seats from there); when
it ends, :meth:`CompetitionStore.finish_match` moves its result here and removes
that row, so that the ladder never rates it, lists it or serves its record.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mammamia.fairness import unseal

from . import schema
from .connection import (
    ERRORS,
    LADDER_LOCK,
    POSTGRESQL,
    Connection,
    connect,
    dialect,
    transaction,
)

#: The advisory lock (per database) of the host that drives a competition's phases
#: and finals (with the hash of the competition's name).
COMPETITION_LOCK = 0x6D6D0010


class StampError(ValueError):
    """A phase change that would not move the competition forward."""


@dataclass(frozen=True, slots=True)
class Stamp:
    """One phase change: the phase begun, when (UNIX time), who made it ("schedule",
    "finals", or the organiser) and why."""

    phase: str
    at: float
    who: str
    reason: str


@dataclass(frozen=True, slots=True)
class FinalsTable:
    """A finals table, played as a duplicate set: its round, number in the round,
    finalists (in the seats of its first match), server seed and commitment."""

    set_id: str
    round: int
    table: int
    names: tuple[str, ...]
    server_seed: str
    commitment: str


@dataclass(frozen=True, slots=True)
class FinalsMatch:
    """A finals match: its set and place in it, its seats, and how it ended
    (``status`` running, finished or aborted; ranks and pizzas per seat once finished;
    the finalists absent when it formed)."""

    match_id: str
    set_id: str
    set_index: int
    round: int
    names: tuple[str, ...]
    commitment: str
    status: str
    ranks: tuple[int, ...]
    delivered: tuple[int, ...]
    absent: tuple[str, ...]
    created: float
    ended: float | None


@dataclass(frozen=True, slots=True)
class CompetitionState:
    """What the database holds of one competition."""

    name: str
    file: str
    started: float
    stamps: tuple[Stamp, ...]
    field: tuple[str, ...] | None
    final: list[dict[str, Any]] | None
    final_reason: str | None
    released: float | None
    released_by: str | None

    @property
    def phase(self) -> str:
        """Returns the phase the competition is in (its latest stamp's)."""
        return self.stamps[-1].phase


class CompetitionStore:
    """One database's competition tables (an SQLite file or a ``postgresql://`` URL).

    Raises SchemaError when the database cannot be brought to this server's schema,
    and what ``server.db.connection.ERRORS`` names when it cannot be reached.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        schema.upgrade(self.path)
        self._db = connect(self.path)
        self._driving: Connection | None = None

    def close(self) -> None:
        """Closes the connections (and with them a claim to drive)."""
        self._db.close()
        if self._driving is not None:
            with suppress(*ERRORS):
                self._driving.close()

    @property
    def shared(self) -> bool:
        """Whether other hosts may share the database (PostgreSQL)."""
        return dialect(self._db) == POSTGRESQL

    def _write(self, lock: int | None = None) -> AbstractContextManager[Connection]:
        written: AbstractContextManager[Connection] = transaction(self._db, lock)
        return written

    # Who drives

    def drive(self, name: str) -> bool:
        """Returns whether this process drives the competition ``name`` (changes its
        phases on schedule and plays its finals): on an SQLite file, always (one
        process); on PostgreSQL, while a connection of its own holds the session
        advisory lock (``COMPETITION_LOCK``, the name's hash), taken here when free.
        A host whose connection is lost gives it up, and another host takes it."""
        if not self.shared:
            return True
        if self._driving is not None:
            try:
                self._driving.execute("SELECT 1").fetchone()
                return True
            except ERRORS:
                with suppress(*ERRORS):
                    self._driving.close()
                self._driving = None
        db = connect(self.path)
        try:
            (taken,) = db.execute(
                "SELECT pg_try_advisory_lock(CAST(? AS INTEGER), hashtext(?))",
                (COMPETITION_LOCK, name),
            ).fetchone()
        except BaseException:
            db.close()
            raise
        if not taken:
            db.close()
            return False
        self._driving = db
        return True

    # Phases

    def open(self, name: str, file: str, started: float, reason: str) -> bool:
        """Records the competition as begun at ``started`` in its first phase
        (registration, stamped by the schedule with ``reason``); returns False
        (changing nothing) when it is recorded already."""
        with self._write() as db:
            if db.execute("SELECT 1 FROM competitions WHERE name = ?", (name,)).fetchone():
                return False
            db.execute(
                "INSERT INTO competitions (name, file, started) VALUES (?, ?, ?)",
                (name, file, started),
            )
            db.execute(
                "INSERT INTO competition_stamps (competition, seq, phase, at, who, reason)"
                " VALUES (?, 1, 'registration', ?, 'schedule', ?)",
                (name, started, reason),
            )
        return True

    def stamp(
        self, name: str, phase: str, order: Sequence[str], at: float, who: str, reason: str
    ) -> Stamp:
        """Records the competition's move to ``phase`` (``order``: every phase, first
        to last) and returns its stamp; raises StampError when the competition is not
        recorded or is at ``phase`` or beyond it already."""
        with self._write() as db:
            row = db.execute(
                "SELECT seq, phase FROM competition_stamps WHERE competition = ?"
                " ORDER BY seq DESC LIMIT 1",
                (name,),
            ).fetchone()
            if row is None:
                raise StampError(f"competition {name!r} has not begun")
            seq, current = row
            if order.index(phase) <= order.index(current):
                raise StampError(
                    f"the competition is in its {current} phase already; "
                    f"{phase} does not come after it"
                )
            db.execute(
                "INSERT INTO competition_stamps (competition, seq, phase, at, who, reason)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (name, seq + 1, phase, at, who, reason),
            )
        return Stamp(phase, at, who, reason)

    def names(self) -> list[str]:
        """Returns the names of the competitions the database holds, oldest first."""
        rows = self._db.execute("SELECT name FROM competitions ORDER BY started, name").fetchall()
        return [r[0] for r in rows]

    def state(self, name: str) -> CompetitionState | None:
        """Returns what the database holds of the competition, or None before it began."""
        row = self._db.execute(
            "SELECT file, started, field, final, final_reason, released, released_by"
            " FROM competitions WHERE name = ?",
            (name,),
        ).fetchone()
        if row is None:
            return None
        stamps = tuple(
            Stamp(p, a, w, r)
            for p, a, w, r in self._db.execute(
                "SELECT phase, at, who, reason FROM competition_stamps WHERE competition = ?"
                " ORDER BY seq",
                (name,),
            ).fetchall()
        )
        return CompetitionState(
            name,
            row[0],
            row[1],
            stamps,
            None if row[2] is None else tuple(json.loads(row[2])),
            None if row[3] is None else json.loads(row[3]),
            row[4],
            row[5],
            row[6],
        )

    def registered(self) -> list[str]:
        """Returns the names registered on the ladder, in the order they registered."""
        rows = self._db.execute("SELECT name FROM ladder_bots ORDER BY created, name").fetchall()
        return [r[0] for r in rows]

    def fix_field(self, name: str, field: Sequence[str]) -> tuple[str, ...]:
        """Records the finals field unless one is recorded; returns the field recorded."""
        with self._write() as db:
            (known,) = db.execute(
                "SELECT field FROM competitions WHERE name = ?", (name,)
            ).fetchone()
            if known is not None:
                return tuple(json.loads(known))
            db.execute(
                "UPDATE competitions SET field = ? WHERE name = ?",
                (json.dumps(list(field)), name),
            )
        return tuple(field)

    def end_finals(self, name: str, final: list[dict[str, Any]], reason: str) -> bool:
        """Records the final table and why the finals stopped; returns False
        (changing nothing) when one is recorded already."""
        with self._write() as db:
            cur = db.execute(
                "UPDATE competitions SET final = ?, final_reason = ?"
                " WHERE name = ? AND final IS NULL",
                (json.dumps(final), reason, name),
            )
            return cur.rowcount == 1

    def release(self, name: str, at: float, who: str) -> bool:
        """Marks the results released; returns False when they were already."""
        with self._write() as db:
            cur = db.execute(
                "UPDATE competitions SET released = ?, released_by = ?"
                " WHERE name = ? AND released IS NULL",
                (at, who, name),
            )
            return cur.rowcount == 1

    # Finals tables and matches

    def start_table(self, name: str, table: FinalsTable) -> None:
        """Records a finals table before its first match (idempotent)."""
        with self._write() as db:
            db.execute(
                "INSERT INTO competition_tables (set_id, competition, round, table_no, names,"
                " server_seed, commitment) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (
                    table.set_id,
                    name,
                    table.round,
                    table.table,
                    json.dumps(list(table.names)),
                    table.server_seed,
                    table.commitment,
                ),
            )

    def tables(self, name: str) -> list[FinalsTable]:
        """Returns the competition's finals tables, in the order they were played."""
        return [
            FinalsTable(s, r, t, tuple(json.loads(n)), seed, c)
            for s, r, t, n, seed, c in self._db.execute(
                "SELECT set_id, round, table_no, names, server_seed, commitment"
                " FROM competition_tables WHERE competition = ? ORDER BY round, table_no",
                (name,),
            ).fetchall()
        ]

    def start_match(
        self,
        name: str,
        match_id: str,
        set_id: str,
        set_index: int,
        round_no: int,
        names: Sequence[str],
        commitment: str,
        absent: Sequence[str],
    ) -> None:
        """Records a finals match as running (idempotent)."""
        with self._write() as db:
            db.execute(
                "INSERT INTO competition_matches (match_id, competition, set_id, set_index,"
                " round, names, commitment, status, absent, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?) ON CONFLICT DO NOTHING",
                (
                    match_id,
                    name,
                    set_id,
                    set_index,
                    round_no,
                    json.dumps(list(names)),
                    commitment,
                    json.dumps(list(absent)),
                    time.time(),
                ),
            )

    def finish_match(
        self,
        match_id: str,
        status: str,
        ranks: Sequence[int] = (),
        delivered: Sequence[int] = (),
    ) -> bool:
        """Stores how a running finals match ended (``finished``, with ranks and
        pizzas per seat, or ``aborted``) and removes its ladder row (the ladder
        never rates it); returns False (changing nothing) when it is not running."""
        # The ladder's lock: its rows change as its own writes change them.
        with self._write(LADDER_LOCK) as db:
            cur = db.execute(
                "UPDATE competition_matches SET status = ?, ranks = ?, delivered = ?, ended = ?"
                " WHERE match_id = ? AND status = 'running'",
                (
                    status,
                    json.dumps(list(ranks)) if ranks else None,
                    json.dumps(list(delivered)) if delivered else None,
                    time.time(),
                    match_id,
                ),
            )
            _forget_ladder_row(db, match_id)
            return cur.rowcount == 1

    def abort_running(self, name: str) -> list[str]:
        """Marks every finals match still recorded as running aborted and removes its
        ladder row (start-up: a restart cut them off); returns their ids."""
        with self._write(LADDER_LOCK) as db:
            running = [
                m
                for (m,) in db.execute(
                    "SELECT match_id FROM competition_matches"
                    " WHERE competition = ? AND status = 'running'",
                    (name,),
                ).fetchall()
            ]
            for match_id in running:
                db.execute(
                    "UPDATE competition_matches SET status = 'aborted', ended = ?"
                    " WHERE match_id = ?",
                    (time.time(), match_id),
                )
                _forget_ladder_row(db, match_id)
        return running

    def sealed(self, name: str) -> list[str]:
        """Returns the sets of the competition's finals tables not yet revealed."""
        rows = self._db.execute(
            "SELECT set_id FROM competition_tables WHERE competition = ? AND revealed = 0"
            " ORDER BY round, table_no",
            (name,),
        ).fetchall()
        return [r[0] for r in rows]

    def reveal_table(self, set_id: str) -> bool:
        """Completes the sealed records of a finals table's ended matches with its
        seed (mammamia.fairness.unseal); returns False when it was revealed already."""
        with self._write() as db:
            row = db.execute(
                "SELECT server_seed FROM competition_tables WHERE set_id = ? AND revealed = 0",
                (set_id,),
            ).fetchone()
            if row is None:
                return False
            seed = row[0]
            records = db.execute(
                "SELECT s.id, s.record FROM competition_matches m"
                " JOIN matches s ON s.id = m.match_id"
                " WHERE m.set_id = ? AND s.record IS NOT NULL",
                (set_id,),
            ).fetchall()
            db.executemany(
                "UPDATE matches SET record = ? WHERE id = ?",
                [(u, m) for m, text in records if (u := unseal(text, seed)) != text],
            )
            db.execute("UPDATE competition_tables SET revealed = 1 WHERE set_id = ?", (set_id,))
        return True

    def matches(self, name: str) -> list[FinalsMatch]:
        """Returns the competition's finals matches, in the order they were created."""
        rows = self._db.execute(
            "SELECT match_id, set_id, set_index, round, names, commitment, status, ranks,"
            " delivered, absent, created, ended FROM competition_matches"
            " WHERE competition = ? ORDER BY created, set_id, set_index",
            (name,),
        ).fetchall()
        return [
            FinalsMatch(
                m,
                s,
                i,
                r,
                tuple(json.loads(n)),
                c,
                st,
                tuple(json.loads(k)) if k else (),
                tuple(json.loads(d)) if d else (),
                tuple(json.loads(a)),
                cr,
                e,
            )
            for m, s, i, r, n, c, st, k, d, a, cr, e in rows
        ]

    def record(self, match_id: str) -> str | None:
        """Returns the stored game record of a match, or None; a finals match's record
        completed with its table's seed once the table is revealed.

        (A match cut off when its host went away may still be finished by another
        host's takeover after its table was revealed: its record is stored sealed,
        and completed here.)
        """
        row = self._db.execute(
            "SELECT s.record, t.server_seed FROM matches s"
            " LEFT JOIN competition_matches m ON m.match_id = s.id"
            " LEFT JOIN competition_tables t ON t.set_id = m.set_id AND t.revealed = 1"
            " WHERE s.id = ?",
            (match_id,),
        ).fetchone()
        if row is None or row[0] is None:
            return None
        return str(row[0]) if row[1] is None else unseal(str(row[0]), str(row[1]))

    def connected(self, names: Sequence[str], since: float) -> set[str]:
        """Returns which of ``names`` have a ladder entry open on any host whose last
        heartbeat came after ``since`` (PostgreSQL's shared lobby; on an SQLite file
        the lobby is in memory and this returns nothing)."""
        if not self.shared or not names:
            return set()
        rows = self._db.execute(
            "SELECT name FROM ladder_entries WHERE name = ANY(?) AND heartbeat > ?",
            (list(names), since),
        ).fetchall()
        return {r[0] for r in rows}

    def publish_ladder_match(
        self,
        match_id: str,
        names: Sequence[str],
        commitment: str,
        set_id: str,
        set_index: int,
        host: str,
        address: str,
        tokens: Sequence[str],
    ) -> None:
        """Records a finals match in the ladder's shared lobby (PostgreSQL) before the
        lobby publishes its seats: the hosts that hold its bots' Enter streams tell
        them from this row."""
        from .ladder.entries import _start_match

        with self._write(LADDER_LOCK) as db:
            _start_match(db, match_id, names, host, address, tokens, commitment, set_id, set_index)


def _forget_ladder_row(db: Connection, match_id: str) -> None:
    db.execute("DELETE FROM ladder_results WHERE match_id = ?", (match_id,))
    db.execute("DELETE FROM ladder_matches WHERE match_id = ?", (match_id,))
