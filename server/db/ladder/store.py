"""LadderStore: the ladder's tables, read and written (see ``server.db.ladder``)."""

from __future__ import annotations

import hmac
import json
import secrets
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, suppress
from pathlib import Path

from mammamia.fairness import unseal

from ...quoting import quoted
from ...status import MatchStatus
from .. import schema
from ..connection import ERRORS, INTEGRITY_ERRORS, LADDER_LOCK, Connection, transaction
from ..matches import reveal_records
from .discipline import Discipline
from .entries import Entries, _start_match
from .leagues import League, configure
from .rating import apply_next
from .reads import LadderReader, LadderReads, _connect
from .rows import LadderError, LadderFullError, NameTakenError, SeatResult, check_name, hash_key
from .scrimmages import Scrimmages


class LadderStore(Entries, Discipline, Scrimmages, LadderReads):
    """The ladder's tables in one database (an SQLite file or a ``postgresql://`` URL);
    every method is one short transaction.

    Reads and writes have a connection each, so that writes may run on a writer
    thread (see :class:`server.db.writer.Writer`) while reads stay where they are
    called; a read sees every write committed before it began. Reads that return a
    lot run on a :class:`LadderReader` of their own (:meth:`reader`). Raises
    SchemaError when the database cannot be brought to this server's schema, and
    what ``server.db.connection.ERRORS`` names when it cannot be reached.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        super().__init__(_connect(self.path))
        try:
            schema.upgrade(self.path)  # the tables: server/db/migrations, up to date
            self._writes = _connect(self.path)
            self._claimed: Connection | None = None  # see claim
            self._claim: tuple[bool, str] | None = None
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        """Closes the connections."""
        self._db.close()
        self._writes.close()
        if self._claimed is not None:
            # Given up here, not by the connection's end, which PostgreSQL sees a
            # moment later (see ``server.db.matches.Storage.close``).
            with suppress(*ERRORS):
                self._claimed.execute("SELECT pg_advisory_unlock_all()")
            self._claimed.close()

    @property
    def shared(self) -> bool:
        """Whether other hosts may share the ladder's database (PostgreSQL)."""
        return self._postgresql

    def reader(self) -> LadderReader:
        """Returns a new reader thread with its own connection to this store's file."""
        return LadderReader(self.path)

    def _write(self) -> AbstractContextManager[Connection]:
        written: AbstractContextManager[Connection] = transaction(self._writes, LADDER_LOCK)
        return written

    # Bots

    def register(
        self, name: str, *, now: float | None = None, max_unentered: int | None = None
    ) -> str:
        """Returns a new secret key for ``name``; raises NameTakenError, LadderError, or
        LadderFullError when ``max_unentered`` names that never entered are registered
        already."""
        check_name(name)
        key = secrets.token_hex(32)  # hex: never begins with a dash on a command line
        with self._write() as db:
            try:
                db.execute(
                    "INSERT INTO ladder_bots (name, key_hash, created) VALUES (?, ?, ?)",
                    (name, hash_key(key), time.time() if now is None else now),
                )
            except INTEGRITY_ERRORS:
                raise NameTakenError(f"bot name {quoted(name)} is already registered") from None
            if max_unentered is not None:
                (waiting,) = db.execute(
                    "SELECT COUNT(*) FROM ladder_bots WHERE entered IS NULL"
                ).fetchone()
                if waiting > max_unentered:  # the new name counted: rolled back
                    raise LadderFullError(
                        f"the ladder holds {max_unentered} registered names that never "
                        f"entered, its limit: enter the ladder with a name you registered, "
                        f"or register again once unused names have expired"
                    )
        return key

    def mark_entered(self, name: str, key: str, now: float | None = None) -> bool:
        """Records that the bot entered now, unless it entered before; returns False
        (changing nothing) when ``name`` is not registered with ``key`` (any more)."""
        with self._write() as db:
            row = db.execute("SELECT key_hash FROM ladder_bots WHERE name = ?", (name,)).fetchone()
            if row is None or not hmac.compare_digest(row[0], hash_key(key)):
                return False
            db.execute(
                "UPDATE ladder_bots SET entered = ? WHERE name = ? AND entered IS NULL",
                (time.time() if now is None else now, name),
            )
        return True

    def enter_version(self, name: str, version: str) -> None:
        """Records ``version`` as the version of the bot's newest entry: the seats of
        the matches that start from now on are that version's."""
        with self._write() as db:
            db.execute("UPDATE ladder_bots SET version = ? WHERE name = ?", (version, name))

    def expire(self, registered_before: float) -> list[str]:
        """Removes the names registered before ``registered_before`` (UNIX time) that
        never entered; returns them."""
        with self._write() as db:
            rows = db.execute(
                "DELETE FROM ladder_bots WHERE entered IS NULL AND created < ? RETURNING name",
                (registered_before,),
            ).fetchall()
        return sorted(r[0] for r in rows)

    # Matches and results

    def start_set(
        self, set_id: str, names: Sequence[str], server_seed: str, commitment: str
    ) -> None:
        """Records a duplicate set as playing, before its first match (idempotent)."""
        with self._write() as db:
            db.execute(
                "INSERT INTO ladder_sets (set_id, players, names, server_seed,"
                " commitment, created) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (set_id, len(names), json.dumps(list(names)), server_seed, commitment, time.time()),
            )

    def reveal_set(self, set_id: str, reason: str) -> str | None:
        """Ends a playing set and returns how: ``complete`` when a match of every
        rotation finished, else ``cut`` (``reason`` stored as why); in the same
        transaction, completes the sealed records of its ended matches with the set's
        seed (mammamia.fairness.unseal). Returns None (changing nothing) when the set
        is not playing; raises RecordError for a stored record that does not replay on
        the set's deal."""
        with self._write() as db:
            row = db.execute(
                "SELECT server_seed, players FROM ladder_sets WHERE set_id = ?"
                " AND status = 'playing'",
                (set_id,),
            ).fetchone()
            if row is None:
                return None
            (finished,) = db.execute(
                "SELECT COUNT(*) FROM ladder_matches WHERE set_id = ? AND status = 'finished'",
                (set_id,),
            ).fetchone()
            status = "complete" if finished == row[1] else "cut"
            seed = row[0]
            reveal_records(db, set_id, lambda text: unseal(text, seed))
            db.execute(
                "UPDATE ladder_sets SET status = ?, ended = ?, reason = ? WHERE set_id = ?",
                (status, time.time(), None if status == "complete" else reason, set_id),
            )
        return status

    def start_match(
        self,
        match_id: str,
        names: Sequence[str],
        commitment: str = "",
        set_id: str | None = None,
        set_index: int | None = None,
        *,
        host: str | None = None,
        address: str | None = None,
        tokens: Sequence[str] | None = None,
    ) -> None:
        """Records a ladder match as running with its seats, its commitment and its
        place in a duplicate set, if any (idempotent); run by the host named ``host``
        (reached at ``address``), with the seats' ``tokens`` kept until it ends (for the
        hosts that hold its bots' Enter streams)."""
        with self._write() as db:
            _start_match(db, match_id, names, host, address, tokens, commitment, set_id, set_index)

    def finish_match(
        self, match_id: str, seats: Sequence[SeatResult], host: str | None = None
    ) -> bool:
        """Stores a running match's result; returns False (changing nothing) otherwise,
        and when ``host`` is given and the match is not that host's (another host took
        it over: ``server.db.hosts``).

        Raises LadderError when ``seats`` does not have one entry per seat.
        """
        with self._write() as db:
            row = db.execute(
                "SELECT status, players, host FROM ladder_matches WHERE match_id = ?",
                (match_id,),
            ).fetchone()
            if row is None or row[0] != MatchStatus.RUNNING:
                return False
            if host is not None and row[2] != host:
                return False
            if len(seats) != row[1]:
                raise LadderError(
                    f"match {quoted(match_id)} has {row[1]} seats, got {len(seats)} results"
                )
            (order,) = db.execute(
                "SELECT COALESCE(MAX(finish_order), 0) + 1 FROM ladder_matches"
            ).fetchone()
            db.execute(
                "UPDATE ladder_matches SET status = 'finished', ended = ?,"
                " finish_order = ? WHERE match_id = ?",
                (time.time(), order, match_id),
            )
            db.executemany(
                "UPDATE ladder_results SET rank = ?, delivered = ?, position = ?,"
                " autopilot = ?, token = NULL"
                " WHERE match_id = ? AND seat = ?",
                [
                    (r.rank, r.delivered, r.position, int(r.autopilot), match_id, s)
                    for s, r in enumerate(seats)
                ],
            )
        return True

    def abort_match(self, match_id: str, host: str | None = None) -> bool:
        """Marks a running match aborted (never rated); returns False if it was not
        running, or (``host`` given) is not that host's (another host took it over)."""
        mine, params = (" AND host = ?", (host,)) if host is not None else ("", ())
        with self._write() as db:
            cur = db.execute(
                "UPDATE ladder_matches SET status = 'aborted', ended = ?"
                " WHERE match_id = ? AND status = 'running'" + mine,
                (time.time(), match_id, *params),
            )
            if cur.rowcount == 1:
                db.execute("UPDATE ladder_results SET token = NULL WHERE match_id = ?", (match_id,))
            return cur.rowcount == 1

    # Leagues

    def configure_leagues(self, leagues: Sequence[League]) -> None:
        """Stores the leagues, lowest first (none: leagues off), their bosses
        registered (``server.db.ladder.leagues.configure``); raises LadderError when a
        boss's name is a registered bot's."""
        with self._write() as db:
            configure(db, leagues)

    # Ratings and tallies

    def apply_ratings(self) -> int:
        """Applies every finished, unrated result in finish order; returns how many.

        Each match's new ratings, its tallies and its ``rated`` marker commit in one
        transaction, so a crash at any point leaves every result rated and counted
        exactly once or not at all.
        """
        applied = 0
        while True:
            with self._write() as db:
                if not apply_next(db):
                    return applied
            applied += 1
