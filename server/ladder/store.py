"""Ladder storage: bots, ladder matches, results per seat, ratings and tallies.

The ladder keeps its tables in the server's own database (an SQLite file in WAL mode,
or PostgreSQL: see :mod:`server.storage`), beside the server's matches and records;
their schema is the migrations in ``server/migrations`` (brought up to date by
:func:`server.schema.upgrade` when the store opens):

    ladder_bots      name, hash of the secret key, when registered, when it first
                     entered (NULL: never; such names expire, :meth:`LadderStore.expire`)
    ladder_matches   one row per ladder match: status running | finished | aborted,
                     the finish order, and ``rated`` (its ratings are applied)
    ladder_results   one row per match and seat: the bot, its rank and pizzas, and the
                     match's creation time (a bot's matches are listed from one index)
    ladder_ratings   mu and sigma per bot, for all matches (players 0) and per
                     player count (players 2..5)
    ladder_tallies   per bot and the same scopes: rated games, wins, pizzas delivered
    ladder_totals    per scope: rated matches
    ladder_positions per player count, bot and seat position (1: round 1's first
                     player): rated games, wins and summed ranks
    ladder_sets      one row per duplicate set: its bots, its server seed (secret
                     until the set ends), commitment and status playing | complete | cut
    ladder_entries   per bot with an Enter stream open on some host: the host, the
                     stream's id, when it entered, its host's last heartbeat (on a
                     PostgreSQL database that many hosts share: see ``server.ladder.hosts``)

Guarantees, each kept by one transaction (on SQLite ``BEGIN IMMEDIATE``: the file's one
writer; on PostgreSQL a transaction that first takes the advisory lock
``server.storage.LADDER_LOCK``, so that the ladder's writers run one at a time there
too, whichever connection or host they come from):

- a result is written once: finishing a match that is not running changes nothing;
- ratings and tallies are applied from stored results in finish order, exactly
  once: the ratings, the tallies and the match's ``rated`` marker commit together,
  so the tallies always equal a count over the rated results (:meth:`LadderReads.recount`);
- a match cut off by a crash is marked aborted at start-up (unless the server
  stored its record, see :meth:`LadderStore.running`) and never rated;
- a duplicate set ends once: its status and the completion of its sealed records
  (the server's ``matches.record``, :meth:`LadderStore.reveal_set`) commit together.

Reads cost what they return, never the history: the standings and the scheduler's
inputs come from the ratings and tallies (a row per bot), match lists walk an index
newest first and stop at their limit. :class:`LadderReader` runs the reads that
return a lot (standings, match lists) on a thread with a connection of its own.

Keys: a bot's key is 256 random bits (``secrets``), so one SHA-256 of it is as good
as a slow password hash; only the hash is stored.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, TypeVar

from mammamia.fairness import unseal

from .. import schema
from ..storage import (
    ERRORS,
    INTEGRITY_ERRORS,
    LADDER_HOST_LOCK,
    LADDER_LOCK,
    POSTGRESQL,
    Connection,
    StorageError,
    connect,
    dialect,
    is_url,
    shown,
    transaction,
)
from .ratings import Rating, Result, initial, rate

#: Bot names: 1 to 32 letters, digits, '-', '_' or '.' (arena.proto, RegisterRequest).
NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,32}")

#: The ratings scope of all matches, whatever their player count.
ALL_PLAYERS = 0

P = ParamSpec("P")
T = TypeVar("T")


class LadderError(ValueError):
    """A ladder request that cannot be granted: a bad or taken name, a wrong key."""


class NameTakenError(LadderError):
    """The bot name is registered already."""


class LadderFullError(LadderError):
    """Registering would pass the bound on names that never entered."""


@dataclass(frozen=True, slots=True)
class SeatResult:
    """One seat's outcome: rank (1 best, ties share), pizzas delivered, and where the
    seat came in round 1's playing order (1: the first player; None: not known)."""

    rank: int
    delivered: int
    position: int | None = None


@dataclass(frozen=True, slots=True)
class PositionTally:
    """A bot's rated games from one seat position of one player count."""

    players: int
    position: int
    games: int
    wins: int
    rank_sum: int

    @property
    def mean_rank(self) -> float:
        """Returns the mean rank from this position (1 best)."""
        return self.rank_sum / self.games if self.games else 0.0


@dataclass(frozen=True, slots=True)
class DealSetRow:
    """A duplicate set as stored: its bots in the first match's seat order, its
    server seed, commitment, status (playing, complete, cut) and matches in order."""

    set_id: str
    names: tuple[str, ...]
    server_seed: str
    commitment: str
    status: str
    matches: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Standing:
    """One bot's line in the standings."""

    rank: int
    name: str
    rating: float
    mu: float
    sigma: float
    games: int
    wins: int
    mean_delivered: float


@dataclass(frozen=True, slots=True)
class Tally:
    """One bot's rated games in one scope: how many, how many won, pizzas delivered."""

    games: int
    wins: int
    delivered: int


@dataclass(frozen=True, slots=True)
class Seated:
    """A bot's seat in a running ladder match, and the host that runs the match."""

    match_id: str
    seat: int
    players: int
    token: str
    host: str
    address: str
    commitment: str = ""


@dataclass(frozen=True, slots=True)
class Formed:
    """A ladder match a scheduling pass formed: its id, names in seat order, tokens."""

    match_id: str
    names: tuple[str, ...]
    tokens: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MatchRow:
    """A ladder match as listed: seat names in seat order, winners once finished."""

    match_id: str
    players: int
    status: str
    created: float
    names: tuple[str, ...]
    winners: tuple[int, ...]
    commitment: str = ""
    set_id: str | None = None
    set_index: int = 0


def hash_key(key: str) -> str:
    """Returns the hex SHA-256 of a bot key (what the database keeps)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def check_name(name: str) -> str:
    """Returns ``name``; raises LadderError unless it is 1 to 32 of [A-Za-z0-9._-]."""
    if not NAME_PATTERN.fullmatch(name):
        raise LadderError(f"bot name {name!r} must be 1 to 32 letters, digits, '-', '_' or '.'")
    return name


class LadderReads:
    """The ladder's reads over one connection (to be used by one thread at a time).

    Each read is one statement, or one read transaction when it takes several
    (:meth:`snapshot`), so it sees the tables as one committed state.
    """

    def __init__(self, db: Connection) -> None:
        self._db = db
        self._postgresql = dialect(db) == POSTGRESQL

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Makes the reads inside one consistent snapshot (a live server may write);
        inside another snapshot it adds nothing."""
        if self._db.in_transaction:
            yield
            return
        # PostgreSQL: one snapshot for the whole transaction (its default gives each
        # statement its own); SQLite's read transaction is one snapshot already.
        self._db.execute(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if self._postgresql else "BEGIN"
        )
        try:
            yield
        finally:
            self._db.execute("COMMIT")

    # Bots

    def check_key(self, name: str, key: str) -> bool:
        """Returns True when ``key`` is the key of the registered bot ``name``."""
        row = self._db.execute(
            "SELECT key_hash FROM ladder_bots WHERE name = ?", (name,)
        ).fetchone()
        return row is not None and hmac.compare_digest(row[0], hash_key(key))

    def entered(self, name: str) -> float | None:
        """Returns when the bot ``name`` first entered (UNIX time), or None: never, or
        not registered."""
        row = self._db.execute("SELECT entered FROM ladder_bots WHERE name = ?", (name,)).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def is_registered(self, name: str) -> bool:
        """Returns whether ``name`` is a registered bot."""
        return (
            self._db.execute("SELECT 1 FROM ladder_bots WHERE name = ?", (name,)).fetchone()
            is not None
        )

    def unentered(self) -> int:
        """Returns how many registered names never entered."""
        (n,) = self._db.execute("SELECT COUNT(*) FROM ladder_bots WHERE entered IS NULL").fetchone()
        return int(n)

    # Ratings and tallies

    def ratings(self, players: int = ALL_PLAYERS) -> dict[str, Rating]:
        """Returns the stored ratings for all matches (0) or one player count."""
        rows = self._db.execute(
            "SELECT name, mu, sigma FROM ladder_ratings WHERE players = ?", (players,)
        ).fetchall()
        return {name: Rating(mu, sigma) for name, mu, sigma in rows}

    def tallies(self, players: int = ALL_PLAYERS) -> dict[str, Tally]:
        """Returns the stored tallies for all matches (0) or one player count (bots
        without a rated game in that scope left out)."""
        rows = self._db.execute(
            "SELECT name, games, wins, delivered FROM ladder_tallies WHERE players = ?", (players,)
        ).fetchall()
        return {name: Tally(games, wins, delivered) for name, games, wins, delivered in rows}

    def recount(self, players: int = ALL_PLAYERS) -> dict[str, Tally]:
        """Returns the tallies counted afresh from every rated result: what
        :meth:`tallies` must equal (a scan of the whole history: for checks only)."""
        rows = self._db.execute(
            "SELECT r.name, COUNT(*), SUM(CASE WHEN r.rank = 1 THEN 1 ELSE 0 END),"
            " COALESCE(SUM(r.delivered), 0)"
            " FROM ladder_results r JOIN ladder_matches m ON m.match_id = r.match_id"
            " WHERE m.rated = 1 AND (? = 0 OR m.players = ?) GROUP BY r.name",
            (players, players),
        ).fetchall()
        return {
            name: Tally(int(games), int(wins), int(delivered))
            for name, games, wins, delivered in rows
        }

    def positions(self, name: str) -> list[PositionTally]:
        """Returns the bot's rated games by player count and seat position, ascending."""
        rows = self._db.execute(
            "SELECT players, position, games, wins, rank_sum FROM ladder_positions"
            " WHERE name = ? ORDER BY players, position",
            (name,),
        ).fetchall()
        return [PositionTally(*map(int, row)) for row in rows]

    def bot_tallies(self, name: str) -> dict[int, Tally]:
        """Returns the bot's tallies per scope (0: all matches; 2..5), scopes without
        a rated game left out."""
        rows = self._db.execute(
            "SELECT players, games, wins, delivered FROM ladder_tallies"
            " WHERE name = ? ORDER BY players",
            (name,),
        ).fetchall()
        return {int(p): Tally(int(g), int(w), int(d)) for p, g, w, d in rows}

    def recount_positions(self) -> dict[tuple[int, str, int], tuple[int, int, int]]:
        """Returns (games, wins, rank sum) per (players, bot, position) counted afresh
        from the rated results: what ladder_positions must hold (for checks only)."""
        rows = self._db.execute(
            "SELECT m.players, r.name, r.position, COUNT(*),"
            " SUM(CASE WHEN r.rank = 1 THEN 1 ELSE 0 END), SUM(r.rank)"
            " FROM ladder_results r JOIN ladder_matches m ON m.match_id = r.match_id"
            " WHERE m.rated = 1 AND r.position IS NOT NULL"
            " GROUP BY m.players, r.name, r.position"
        ).fetchall()
        return {(int(p), n, int(k)): (int(g), int(w), int(s)) for p, n, k, g, w, s in rows}

    def stored_positions(self) -> dict[tuple[int, str, int], tuple[int, int, int]]:
        """Returns ladder_positions as :meth:`recount_positions` counts it."""
        rows = self._db.execute(
            "SELECT players, name, position, games, wins, rank_sum FROM ladder_positions"
        ).fetchall()
        return {(int(p), n, int(k)): (int(g), int(w), int(s)) for p, n, k, g, w, s in rows}

    def deal_set(self, set_id: str) -> DealSetRow | None:
        """Returns a duplicate set with its matches in order, or None when unknown."""
        row = self._db.execute(
            "SELECT names, server_seed, commitment, status FROM ladder_sets WHERE set_id = ?",
            (set_id,),
        ).fetchone()
        if row is None:
            return None
        matches = self._db.execute(
            "SELECT match_id FROM ladder_matches WHERE set_id = ? ORDER BY set_index", (set_id,)
        ).fetchall()
        return DealSetRow(
            set_id, tuple(json.loads(row[0])), row[1], row[2], row[3], tuple(m for (m,) in matches)
        )

    def playing_sets(self) -> list[str]:
        """Returns the ids of the sets still marked playing (after a crash: cut off)."""
        rows = self._db.execute(
            "SELECT set_id FROM ladder_sets WHERE status = 'playing' ORDER BY created"
        ).fetchall()
        return [r[0] for r in rows]

    def rated(self, players: int = ALL_PLAYERS) -> int:
        """Returns how many matches are rated, of all (0) or of one player count."""
        row = self._db.execute(
            "SELECT matches FROM ladder_totals WHERE players = ?", (players,)
        ).fetchone()
        return 0 if row is None else int(row[0])

    def games_played(self) -> dict[str, int]:
        """Returns how many rated matches each bot has played (bots with none left out)."""
        return {name: t.games for name, t in self.tallies(ALL_PLAYERS).items()}

    def waiting(self, names: Sequence[str]) -> dict[str, tuple[Rating, int]]:
        """Returns the rating over all matches and the rated games of each of ``names``
        that has played (a row each: what the scheduler needs of waiting bots)."""
        return _waiting(self._db, names)

    def seats(self, names: Sequence[str]) -> dict[str, Seated]:
        """Returns the seat each of ``names`` holds in a running ladder match (those
        seated), with its token and the host that runs the match."""
        among, listed = _among(self._db, names)
        rows = self._db.execute(
            "SELECT r.name, r.match_id, r.seat, m.players, r.token, m.host, m.address,"
            " m.commitment FROM ladder_matches m"
            " JOIN ladder_results r ON r.match_id = m.match_id"
            f" WHERE m.status = 'running' AND r.token IS NOT NULL AND r.name {among}",
            (listed,),
        ).fetchall()
        return {
            name: Seated(
                match_id,
                int(seat),
                int(players),
                token,
                host or "",
                address or "",
                commitment or "",
            )
            for name, match_id, seat, players, token, host, address, commitment in rows
        }

    def entries(self, names: Sequence[str]) -> dict[str, tuple[str, str]]:
        """Returns (host, stream id) of the Enter stream each of ``names`` has open
        (those with one)."""
        among, listed = _among(self._db, names)
        rows = self._db.execute(
            f"SELECT name, host, stream FROM ladder_entries WHERE name {among}", (listed,)
        ).fetchall()
        return {name: (host, stream) for name, host, stream in rows}

    def rated_results(self, players: int = ALL_PLAYERS) -> list[Result]:
        """Returns the rated results in finish order (all, or one player count)."""
        ids = self._db.execute(
            "SELECT match_id FROM ladder_matches WHERE status = 'finished' AND rated = 1"
            " AND (? = 0 OR players = ?) ORDER BY finish_order",
            (players, players),
        ).fetchall()
        return [_result_of(self._db, match_id) for (match_id,) in ids]

    def unrated(self) -> int:
        """Returns how many finished results wait to be rated."""
        (n,) = self._db.execute(
            "SELECT COUNT(*) FROM ladder_matches WHERE status = 'finished' AND rated = 0"
        ).fetchone()
        return int(n)

    def player_counts(self) -> list[int]:
        """Returns the player counts of the rated matches, ascending."""
        rows = self._db.execute(
            "SELECT players FROM ladder_totals WHERE players > 0 AND matches > 0 ORDER BY players"
        ).fetchall()
        return [r[0] for r in rows]

    def running(self, host: str | None = None) -> list[str]:
        """Returns the ids of matches still marked running (after a crash: cut off), of
        every host, or of the host named ``host`` only."""
        if host is None:
            rows = self._db.execute(
                "SELECT match_id FROM ladder_matches WHERE status = 'running' ORDER BY created"
            ).fetchall()
        else:
            rows = self._db.execute(
                "SELECT match_id FROM ladder_matches WHERE status ="
                " 'running' AND host = ? ORDER BY created",
                (host,),
            ).fetchall()
        return [r[0] for r in rows]

    # Standings and matches

    def standings(self, players: int = ALL_PLAYERS) -> tuple[int, list[Standing]]:
        """Returns (rated matches, standings best first) for all matches or one count."""
        # One statement (one snapshot), its rows gathered by the database into one JSON
        # text: on a reader thread, one hand-over of the interpreter instead of one a row.
        ((finished, lines),) = self._db.execute(
            *(
                (_STANDINGS_POSTGRESQL, (players, players))
                if self._postgresql
                else (_STANDINGS, (players,))
            )
        ).fetchall()
        rated = sorted(
            (
                (Rating(mu, sigma), name, games, wins, delivered)
                for name, mu, sigma, games, wins, delivered in json.loads(lines)
            ),
            key=lambda line: (-line[0].conservative, line[1]),
        )
        return int(finished), [
            Standing(
                rank,
                name,
                r.conservative,
                r.mu,
                r.sigma,
                games,
                wins,
                delivered / games if games else 0.0,
            )
            for rank, (r, name, games, wins, delivered) in enumerate(rated, start=1)
        ]

    def matches(
        self, name: str | None = None, limit: int = 20, status: str | None = None
    ) -> list[MatchRow]:
        """Returns up to ``limit`` ladder matches newest first: all, or those ``name``
        played in; of any status, or of ``status`` only."""
        if name is not None:
            # The bot's results newest first (one index), each match's status checked.
            page = (
                "SELECT m.match_id FROM ladder_results r"
                " JOIN ladder_matches m ON m.match_id = r.match_id WHERE r.name = ?"
                + (" AND m.status = ?" if status is not None else "")
                + " ORDER BY r.created DESC, r.match_id LIMIT ?"
            )
            params: tuple[object, ...] = (name, *(() if status is None else (status,)), limit)
        elif status is not None:
            page = (
                "SELECT match_id FROM ladder_matches WHERE status = ?"
                " ORDER BY created DESC, match_id LIMIT ?"
            )
            params = (status, limit)
        else:
            page = "SELECT match_id FROM ladder_matches ORDER BY created DESC, match_id LIMIT ?"
            params = (limit,)
        return sorted(self._rows(page, params), key=lambda m: (-m.created, m.match_id))

    def match(self, match_id: str) -> MatchRow | None:
        """Returns one ladder match, or None when ``match_id`` is not a ladder match."""
        rows = self._rows("SELECT CAST(? AS TEXT) AS match_id", (match_id,))
        return rows[0] if rows else None

    def _rows(self, page: str, params: Sequence[object]) -> list[MatchRow]:
        """Returns the matches whose ids the query ``page`` selects, with their seats:
        one statement (one snapshot), gathered by SQLite into one JSON text."""
        ((listed,),) = self._db.execute(
            (_ROWS_POSTGRESQL if self._postgresql else _ROWS).format(page=page), params
        ).fetchall()
        rows = []
        for match_id, players, status, created, commitment, set_id, set_index, seats in json.loads(
            listed
        ):
            seated = sorted(seats)
            winners = tuple(seat for seat, _, rank in seated if rank == 1)
            rows.append(
                MatchRow(
                    match_id,
                    players,
                    status,
                    created,
                    tuple(name for _, name, _ in seated),
                    winners if status == "finished" else (),
                    commitment or "",
                    set_id,
                    int(set_index or 0),
                )
            )
        return rows


class LadderStore(LadderReads):
    """The ladder's tables in one database (an SQLite file or a ``postgresql://`` URL);
    every method is one short transaction.

    Reads and writes have a connection each, so that writes may run on a writer
    thread (see :class:`server.storage.Writer`) while reads stay where they are
    called; a read sees every write committed before it began. Reads that return a
    lot run on a :class:`LadderReader` of their own (:meth:`reader`). Raises
    SchemaError when the database cannot be brought to this server's schema, and
    what ``server.storage.ERRORS`` names when it cannot be reached.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        super().__init__(_connect(self.path))
        try:
            schema.upgrade(self.path)  # the tables: server/migrations, up to date
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
            # moment later (see ``server.storage.Storage.close``).
            with suppress(*ERRORS):
                self._claimed.execute("SELECT pg_advisory_unlock_all()")
            self._claimed.close()

    @property
    def shared(self) -> bool:
        """Whether other hosts may share the ladder's database (PostgreSQL)."""
        return self._postgresql

    def claim(self, alone: bool, host: str) -> None:
        """On PostgreSQL, takes the ladder for this host alone (``alone``: duplicate
        sets, which ``server.ladder.hosts`` does not schedule across hosts, need a
        ladder of one host), or as one of the hosts that share it; raises StorageError
        when another host holds it the other way. A session advisory lock on
        (``LADDER_LOCK``, 1), exclusive or shared, held by a connection of its own for
        as long as the process runs; the same connection holds the host's presence,
        (``LADDER_HOST_LOCK``, the hash of ``host``), which the other hosts' passes
        read (:meth:`take`). On an SQLite file, nothing to take."""
        if not self._postgresql:
            return
        db = connect(self.path)
        try:
            taken = self._lock(db, alone, host)
        except BaseException:
            db.close()
            raise
        if not taken:
            db.close()
            raise StorageError(
                f"{shown(self.path)}: another host runs this database's ladder "
                + (
                    "with other hosts; --ladder-duplicate needs a ladder of one host"
                    if alone
                    else "alone (with --ladder-duplicate); stop it, or give this host another --db"
                )
            )
        self._claimed = db
        self._claim = (alone, host)

    def keep_claim(self) -> bool:
        """Takes the claim of :meth:`claim` again when its session lost it (PostgreSQL
        restarted, and its locks went with it); returns whether it was taken again.
        For the writer thread, with every heartbeat. Raises StorageError when another
        host now holds the ladder the other way, and what ``server.storage.ERRORS``
        names when the database is away (the next call connects again)."""
        if self._claimed is None or self._claim is None:
            return False
        alone, host = self._claim
        (held,) = self._claimed.execute(
            "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND pid = pg_backend_pid() AND objsubid = 2 AND classid = CAST(? AS oid)"
            " AND objid = CAST(hashtext(?) AS oid)",
            (LADDER_HOST_LOCK, host),
        ).fetchone()
        if held:
            return False
        if not self._lock(self._claimed, alone, host):
            raise StorageError(
                f"{shown(self.path)}: another host took this database's "
                f"ladder {'with others' if alone else 'alone'} meanwhile"
            )
        return True

    @staticmethod
    def _lock(db: Connection, alone: bool, host: str) -> bool:
        """Returns whether ``db``'s session took the ladder (alone or shared) and the
        host's presence; takes neither when the ladder is held the other way."""
        take = "pg_try_advisory_lock" if alone else "pg_try_advisory_lock_shared"
        (taken,) = db.execute(f"SELECT {take}(CAST(? AS INTEGER), 1)", (LADDER_LOCK,)).fetchone()
        if taken:
            db.execute(
                "SELECT pg_advisory_lock_shared(CAST(? AS INTEGER), hashtext(?))",
                (LADDER_HOST_LOCK, host),
            )
        return bool(taken)

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
                raise NameTakenError(f"bot name {name!r} is already registered") from None
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
            records = db.execute(
                "SELECT s.id, s.record FROM ladder_matches m JOIN matches s ON s.id = m.match_id"
                " WHERE m.set_id = ? AND s.record IS NOT NULL",
                (set_id,),
            ).fetchall()
            revealed = [
                (unsealed, match_id)
                for match_id, text in records
                if (unsealed := unseal(text, row[0])) != text
            ]
            db.executemany("UPDATE matches SET record = ? WHERE id = ?", revealed)
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

    def finish_match(self, match_id: str, seats: Sequence[SeatResult]) -> bool:
        """Stores a running match's result; returns False (changing nothing) otherwise.

        Raises LadderError when ``seats`` does not have one entry per seat.
        """
        with self._write() as db:
            row = db.execute(
                "SELECT status, players FROM ladder_matches WHERE match_id = ?", (match_id,)
            ).fetchone()
            if row is None or row[0] != "running":
                return False
            if len(seats) != row[1]:
                raise LadderError(
                    f"match {match_id!r} has {row[1]} seats, got {len(seats)} results"
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
                " token = NULL"
                " WHERE match_id = ? AND seat = ?",
                [(r.rank, r.delivered, r.position, match_id, s) for s, r in enumerate(seats)],
            )
        return True

    def abort_match(self, match_id: str) -> bool:
        """Marks a running match aborted (never rated); returns False if it was not running."""
        with self._write() as db:
            cur = db.execute(
                "UPDATE ladder_matches SET status = 'aborted', ended = ?"
                " WHERE match_id = ? AND status = 'running'",
                (time.time(), match_id),
            )
            db.execute("UPDATE ladder_results SET token = NULL WHERE match_id = ?", (match_id,))
            return cur.rowcount == 1

    # Entries and matches of many hosts

    def adopt(self, host: str) -> int:
        """Returns how many running matches without a host (recorded before hosts were
        named) the host ``host`` took as its own."""
        with self._write() as db:
            cur = db.execute(
                "UPDATE ladder_matches SET host = ? WHERE host IS NULL AND status = 'running'",
                (host,),
            )
            return int(cur.rowcount)

    def enter(self, name: str, host: str, stream: str, now: float) -> None:
        """Records that the bot ``name`` has an Enter stream ``stream`` open on ``host``
        (replacing any older entry of the bot: that stream is then replaced)."""
        self._writes.execute(
            "INSERT INTO ladder_entries (name, host, stream, entered, heartbeat)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET host = excluded.host,"
            " stream = excluded.stream, entered = excluded.entered,"
            " heartbeat = excluded.heartbeat",
            (name, host, stream, now, now),
        )

    def leave(self, name: str, stream: str) -> None:
        """Removes the entry of ``name`` if it is still the stream ``stream``'s."""
        self._writes.execute(
            "DELETE FROM ladder_entries WHERE name = ? AND stream = ?", (name, stream)
        )

    def beat(self, host: str, streams: Sequence[str], now: float) -> None:
        """Marks the entries of ``streams`` held by ``host`` alive at ``now`` (a row
        whose stream ended without its removal, the database away then, goes quiet)."""
        if not streams:
            return
        among, listed = _among(self._writes, streams)
        self._writes.execute(
            f"UPDATE ladder_entries SET heartbeat = ? WHERE host = ? AND stream {among}",
            (now, host, listed),
        )

    def clear_entries(self, host: str) -> int:
        """Removes the entries held by ``host`` (at its start-up: its streams are gone);
        returns how many."""
        cur = self._writes.execute("DELETE FROM ladder_entries WHERE host = ?", (host,))
        return int(cur.rowcount)

    def publish(self, match_id: str, tokens: Sequence[str], commitment: str) -> None:
        """Gives a running match formed by :meth:`take` its seats' tokens and its
        commitment, once the match exists: from then on the hosts of its bots' Enter
        streams hand its seats out, commitment included (a match that ended meanwhile
        keeps none)."""
        with self._write() as db:
            db.execute(
                "UPDATE ladder_matches SET commitment = ? WHERE match_id = ?"
                " AND status = 'running'",
                (commitment or None, match_id),
            )
            db.executemany(
                "UPDATE ladder_results SET token = ? WHERE match_id = ?"
                " AND seat = ? AND EXISTS (SELECT 1 FROM ladder_matches m"
                " WHERE m.match_id = ? AND m.status = 'running')",
                [(t, match_id, s, match_id) for s, t in enumerate(tokens)],
            )

    def take(
        self,
        host: str,
        address: str,
        alive_since: float,
        form: Callable[[list[tuple[str, Rating, int]]], list[tuple[str, ...]]],
        reserve: Callable[[int], tuple[str, Sequence[str]]],
    ) -> list[Formed]:
        """Returns the matches formed from the bots waiting on any host, recorded as
        running on ``host``: one transaction under the ladder's lock, so that no other
        host's pass sees the same bots waiting.

        A bot waits when its entry beat at ``alive_since`` or later, it holds no seat
        in a running match, and (on PostgreSQL) its entry's host is ``host`` or holds
        its presence (:meth:`claim`): a host that died is passed over as soon as
        PostgreSQL ends its session, not only once its heartbeats are ``alive_since``
        old (those cover a host whose session lingers, cut off from the database).
        ``form`` gets them as (name, rating over all matches, rated games) and returns
        the matches to start (names in seat order); ``reserve(n)`` returns a new match
        id and ``n`` seat tokens for each. The seats are recorded without their tokens:
        :meth:`publish` adds them once the match exists."""
        formed: list[Formed] = []
        present, params = (_PRESENT, (host, LADDER_HOST_LOCK)) if self._postgresql else ("", ())
        with self._write() as db:
            names = [
                n
                for (n,) in db.execute(
                    "SELECT e.name FROM ladder_entries e WHERE e.heartbeat >= ?"
                    + present
                    + " AND e.name NOT IN (SELECT r.name FROM ladder_matches m"
                    " JOIN ladder_results r ON r.match_id = m.match_id"
                    " WHERE m.status = 'running') ORDER BY e.entered",
                    (alive_since, *params),
                ).fetchall()
            ]
            if not names:
                return formed
            known = _waiting(db, names)
            fresh = (initial(), 0)
            for seated in form([(n, *known.get(n, fresh)) for n in names]):
                match_id, tokens = reserve(len(seated))
                _start_match(db, match_id, seated, host, address, None)
                formed.append(Formed(match_id, tuple(seated), tuple(tokens)))
        return formed

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
                row = db.execute(
                    "SELECT match_id, players FROM ladder_matches"
                    " WHERE status = 'finished' AND rated = 0"
                    " ORDER BY finish_order LIMIT 1"
                ).fetchone()
                if row is None:
                    return applied
                match_id, players = row
                placed = db.execute(
                    "SELECT name, rank, delivered, position FROM ladder_results"
                    " WHERE match_id = ? ORDER BY seat",
                    (match_id,),
                ).fetchall()
                seats = [(n, k, d) for n, k, d, _ in placed]
                names = tuple(n for n, _, _ in seats)
                ranks = tuple(int(k) for _, k, _ in seats)
                db.executemany(
                    "INSERT INTO ladder_positions (players, name, position, games, wins,"
                    " rank_sum) VALUES (?, ?, ?, 1, ?, ?) ON CONFLICT (players, name, position)"
                    " DO UPDATE SET games = ladder_positions.games + 1,"
                    " wins = ladder_positions.wins + excluded.wins,"
                    " rank_sum = ladder_positions.rank_sum + excluded.rank_sum",
                    [
                        (players, n, p, int(k == 1), int(k))
                        for n, k, _, p in placed
                        if p is not None
                    ],
                )
                for scope in (ALL_PLAYERS, players):
                    before = [self._rating(db, scope, name) for name in names]
                    after = rate(before, ranks)
                    db.executemany(
                        "INSERT INTO ladder_ratings (players, name, mu, sigma) VALUES (?, ?, ?, ?)"
                        " ON CONFLICT (players, name) DO UPDATE SET mu = excluded.mu,"
                        " sigma = excluded.sigma",
                        [(scope, n, r.mu, r.sigma) for n, r in zip(names, after, strict=True)],
                    )
                    db.executemany(
                        "INSERT INTO ladder_tallies (players, name, games, wins, delivered)"
                        " VALUES (?, ?, 1, ?, ?) ON CONFLICT (players, name) DO UPDATE SET"
                        " games = ladder_tallies.games + 1,"
                        " wins = ladder_tallies.wins + excluded.wins,"
                        " delivered = ladder_tallies.delivered + excluded.delivered",
                        [(scope, n, int(k == 1), d or 0) for n, k, d in seats],
                    )
                    db.execute(
                        "INSERT INTO ladder_totals (players, matches) VALUES (?, 1)"
                        " ON CONFLICT (players) DO UPDATE SET"
                        " matches = ladder_totals.matches + 1",
                        (scope,),
                    )
                db.execute("UPDATE ladder_matches SET rated = 1 WHERE match_id = ?", (match_id,))
            applied += 1

    @staticmethod
    def _rating(db: Connection, scope: int, name: str) -> Rating:
        row = db.execute(
            "SELECT mu, sigma FROM ladder_ratings WHERE players = ? AND name = ?", (scope, name)
        ).fetchone()
        return initial() if row is None else Rating(row[0], row[1])


class LadderReader:
    """The ladder's reads on a thread of their own, with a connection of their own.

    For the reads that return a lot (standings: a line per bot; match lists: up to
    their limit): the event loop awaits them and never waits for the disk or the
    rows itself. One thread, so the connection is never used by two at once.
    """

    def __init__(self, path: str | Path) -> None:
        self._reads = LadderReads(_connect(str(path)))
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ladder-reader")

    async def run(self, read: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Returns ``read(*args, **kwargs)`` run on the reader's thread."""
        return await asyncio.wrap_future(self._pool.submit(read, *args, **kwargs))

    async def standings(self, players: int = ALL_PLAYERS) -> tuple[int, list[Standing]]:
        """Returns :meth:`LadderReads.standings`, read on the reader's thread."""
        return await self.run(self._reads.standings, players)

    async def matches(
        self, name: str | None = None, limit: int = 20, status: str | None = None
    ) -> list[MatchRow]:
        """Returns :meth:`LadderReads.matches`, read on the reader's thread."""
        return await self.run(self._reads.matches, name, limit, status)

    async def match(self, match_id: str) -> MatchRow | None:
        """Returns :meth:`LadderReads.match`, read on the reader's thread."""
        return await self.run(self._reads.match, match_id)

    async def bot_stats(self, name: str) -> tuple[dict[int, Tally], list[PositionTally]]:
        """Returns the bot's tallies per scope and by seat position, read in one
        snapshot on the reader's thread."""

        def read() -> tuple[dict[int, Tally], list[PositionTally]]:
            with self._reads.snapshot():
                return self._reads.bot_tallies(name), self._reads.positions(name)

        return await self.run(read)

    async def is_registered(self, name: str) -> bool:
        """Returns whether ``name`` is a registered bot, read on the reader's thread."""
        return await self.run(self._reads.is_registered, name)

    async def streams(
        self, names: Sequence[str]
    ) -> tuple[dict[str, Seated], dict[str, tuple[str, str]]]:
        """Returns (:meth:`LadderReads.seats`, :meth:`LadderReads.entries`) of ``names``,
        read on the reader's thread in one snapshot."""
        return await self.run(self._streams, names)

    def _streams(
        self, names: Sequence[str]
    ) -> tuple[dict[str, Seated], dict[str, tuple[str, str]]]:
        with self._reads.snapshot():
            return self._reads.seats(names), self._reads.entries(names)

    def close(self) -> None:
        """Waits for the reads under way, then closes the connection."""
        self._pool.shutdown(wait=True)
        self._reads._db.close()


def _connect(path: str) -> Connection:
    """Returns a connection in autocommit mode (synced commits), usable from any
    thread: transactions are opened explicitly (:func:`server.storage.transaction`)
    so that the check and the write of each guarantee cannot interleave."""
    if is_url(path):
        return connect(path, durable=True)
    db = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA busy_timeout=30000")
    connection: Connection = db
    return connection


#: The standings in one JSON text (parameters: the scope; on PostgreSQL, twice).
_STANDINGS = (
    "SELECT COALESCE((SELECT matches FROM ladder_totals WHERE players = ?1), 0),"
    " json_group_array(json_array(r.name, r.mu, r.sigma, COALESCE(t.games, 0),"
    " COALESCE(t.wins, 0), COALESCE(t.delivered, 0))) FROM ladder_ratings r"
    " LEFT JOIN ladder_tallies t ON t.players = r.players AND t.name = r.name"
    " WHERE r.players = ?1"
)
_STANDINGS_POSTGRESQL = (
    "SELECT COALESCE((SELECT matches FROM ladder_totals WHERE players = ?), 0),"
    " COALESCE(json_agg(json_build_array(r.name, r.mu, r.sigma, COALESCE(t.games, 0),"
    " COALESCE(t.wins, 0), COALESCE(t.delivered, 0)))::text, '[]') FROM ladder_ratings r"
    " LEFT JOIN ladder_tallies t ON t.players = r.players AND t.name = r.name"
    " WHERE r.players = ?"
)

#: The matches whose ids the query ``{page}`` selects, with their seats, in one JSON text.
_ROWS = (
    "SELECT json_group_array(json_array(m.match_id, m.players, m.status, m.created,"
    " m.commitment, m.set_id, m.set_index,"
    " json((SELECT json_group_array(json_array(r.seat, r.name, r.rank))"
    " FROM ladder_results r WHERE r.match_id = m.match_id))))"
    " FROM ({page}) p JOIN ladder_matches m ON m.match_id = p.match_id"
)
_ROWS_POSTGRESQL = (
    "SELECT COALESCE(json_agg(json_build_array(m.match_id, m.players, m.status, m.created,"
    " m.commitment, m.set_id, m.set_index,"
    " (SELECT COALESCE(json_agg(json_build_array(r.seat, r.name, r.rank)), '[]'::json)"
    " FROM ladder_results r WHERE r.match_id = m.match_id)))::text, '[]')"
    " FROM ({page}) p JOIN ladder_matches m ON m.match_id = p.match_id"
)


def _start_match(
    db: Connection,
    match_id: str,
    names: Sequence[str],
    host: str | None,
    address: str | None,
    tokens: Sequence[str] | None,
    commitment: str = "",
    set_id: str | None = None,
    set_index: int | None = None,
) -> None:
    db.execute(
        "INSERT INTO ladder_matches (match_id, players, status, created, commitment,"
        " set_id, set_index, host, address) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        (match_id, len(names), time.time(), commitment or None, set_id, set_index, host, address),
    )
    (created,) = db.execute(
        "SELECT created FROM ladder_matches WHERE match_id = ?", (match_id,)
    ).fetchone()
    held = list(tokens) if tokens is not None else [None] * len(names)
    db.executemany(
        "INSERT INTO ladder_results (match_id, seat, name, created, token)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [(match_id, s, n, created, t) for s, (n, t) in enumerate(zip(names, held, strict=True))],
    )


def _among(db: Connection, names: Sequence[str]) -> tuple[str, object]:
    """Returns the SQL test "is one of ``names``" and its one parameter."""
    if dialect(db) == POSTGRESQL:
        return "= ANY(?)", list(names)
    return "IN (SELECT value FROM json_each(?))", json.dumps(list(names))


#: The condition on an entry ``e`` that its host is the pass's own (the first
#: parameter) or holds its presence lock (the second, ``LADDER_HOST_LOCK``) in this
#: database; int4 keys show in ``pg_locks`` as the oids of their 32 bits.
_PRESENT = (
    " AND (e.host = ? OR CAST(hashtext(e.host) AS oid) IN (SELECT l.objid"
    " FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted"
    " AND l.objsubid = 2 AND l.classid = CAST(? AS oid) AND l.database ="
    " (SELECT oid FROM pg_database WHERE datname = current_database())))"
)


def _waiting(db: Connection, names: Sequence[str]) -> dict[str, tuple[Rating, int]]:
    among, listed = _among(db, names)
    rows = db.execute(
        "SELECT r.name, r.mu, r.sigma, COALESCE(t.games, 0) FROM ladder_ratings r"
        " LEFT JOIN ladder_tallies t ON t.players = r.players AND t.name = r.name"
        f" WHERE r.players = 0 AND r.name {among}",
        (listed,),
    ).fetchall()
    return {name: (Rating(mu, sigma), int(games)) for name, mu, sigma, games in rows}


def _result_of(db: Connection, match_id: str) -> Result:
    rows = db.execute(
        "SELECT name, rank FROM ladder_results WHERE match_id = ? ORDER BY seat", (match_id,)
    ).fetchall()
    return Result(tuple(n for n, _ in rows), tuple(int(k) for _, k in rows))
