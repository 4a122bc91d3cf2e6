"""Ladder storage: bots, ladder matches, results per seat and ratings, in SQLite.

The ladder keeps its tables in the server's own database file (WAL), beside the
server's matches and records, through its own connections (one for reads, one for
writes):

    ladder_bots      name, hash of the secret key, when registered
    ladder_matches   one row per ladder match: status running | finished | aborted,
                     the finish order, and ``rated`` (its ratings are applied)
    ladder_results   one row per match and seat: the bot, its rank and pizzas
    ladder_ratings   mu and sigma per bot, for all matches (players 0) and per
                     player count (players 2..5)

Guarantees, each kept by one transaction:

- a result is written once: finishing a match that is not running changes nothing;
- ratings are applied from stored results in finish order, exactly once: the
  update and the match's ``rated`` marker commit together;
- a match cut off by a crash is marked aborted at start-up (unless the server
  stored its record, see :meth:`LadderStore.running`) and never rated.

Keys: a bot's key is 256 random bits (``secrets``), so one SHA-256 of it is as good
as a slow password hash; only the hash is stored.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import schema
from .ratings import Rating, Result, initial, rate

#: Bot names: 1 to 32 letters, digits, '-', '_' or '.' (arena.proto, RegisterRequest).
NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,32}")

#: The ratings scope of all matches, whatever their player count.
ALL_PLAYERS = 0

class LadderError(ValueError):
    """A ladder request that cannot be granted: a bad or taken name, a wrong key."""


class NameTakenError(LadderError):
    """The bot name is registered already."""


@dataclass(frozen=True, slots=True)
class SeatResult:
    """One seat's outcome: rank (1 best, ties share) and pizzas delivered."""

    rank: int
    delivered: int


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
class MatchRow:
    """A ladder match as listed: seat names in seat order, winners once finished."""

    match_id: str
    players: int
    status: str
    created: float
    names: tuple[str, ...]
    winners: tuple[int, ...]


def hash_key(key: str) -> str:
    """Returns the hex SHA-256 of a bot key (what the database keeps)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def check_name(name: str) -> str:
    """Returns ``name``; raises LadderError unless it is 1 to 32 of [A-Za-z0-9._-]."""
    if not NAME_PATTERN.fullmatch(name):
        raise LadderError(f"bot name {name!r} must be 1 to 32 letters, digits, '-', '_' or '.'")
    return name


class LadderStore:
    """The ladder's tables in one SQLite file; every method is one short transaction.

    Reads and writes have a connection each, so that writes may run on a writer
    thread (see :class:`server.storage.Writer`) while reads stay where they are
    called; under WAL a read sees every write committed before it began.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._db = _connect(self.path)
        schema.upgrade(self.path)      # the tables: server/migrations, up to date
        self._writes = _connect(self.path)

    def close(self) -> None:
        """Closes the connections."""
        self._db.close()
        self._writes.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        db = self._writes
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Makes the reads inside one consistent snapshot (a live server may write)."""
        self._db.execute("BEGIN")
        try:
            yield
        finally:
            self._db.execute("COMMIT")

    # Bots

    def register(self, name: str) -> str:
        """Returns a new secret key for ``name``; raises NameTakenError or LadderError."""
        check_name(name)
        key = secrets.token_hex(32)  # hex: never begins with a dash on a command line
        with self._write() as db:
            try:
                db.execute("INSERT INTO ladder_bots (name, key_hash, created) VALUES (?, ?, ?)",
                           (name, hash_key(key), time.time()))
            except sqlite3.IntegrityError:
                raise NameTakenError(f"bot name {name!r} is already registered") from None
        return key

    def check_key(self, name: str, key: str) -> bool:
        """Returns True when ``key`` is the key of the registered bot ``name``."""
        row = self._db.execute("SELECT key_hash FROM ladder_bots WHERE name = ?",
                               (name,)).fetchone()
        return row is not None and hmac.compare_digest(row[0], hash_key(key))

    # Matches and results

    def start_match(self, match_id: str, names: Sequence[str]) -> None:
        """Records a ladder match as running with its seats (idempotent)."""
        with self._write() as db:
            db.execute("INSERT OR IGNORE INTO ladder_matches (match_id, players, status, created)"
                       " VALUES (?, ?, 'running', ?)", (match_id, len(names), time.time()))
            db.executemany("INSERT OR IGNORE INTO ladder_results (match_id, seat, name)"
                           " VALUES (?, ?, ?)", [(match_id, s, n) for s, n in enumerate(names)])

    def finish_match(self, match_id: str, seats: Sequence[SeatResult]) -> bool:
        """Stores a running match's result; returns False (changing nothing) otherwise.

        Raises LadderError when ``seats`` does not have one entry per seat.
        """
        with self._write() as db:
            row = db.execute("SELECT status, players FROM ladder_matches WHERE match_id = ?",
                             (match_id,)).fetchone()
            if row is None or row[0] != "running":
                return False
            if len(seats) != row[1]:
                raise LadderError(f"match {match_id!r} has {row[1]} seats, "
                                  f"got {len(seats)} results")
            (order,) = db.execute("SELECT COALESCE(MAX(finish_order), 0) + 1"
                                  " FROM ladder_matches").fetchone()
            db.execute("UPDATE ladder_matches SET status = 'finished', ended = ?,"
                       " finish_order = ? WHERE match_id = ?", (time.time(), order, match_id))
            db.executemany("UPDATE ladder_results SET rank = ?, delivered = ?"
                           " WHERE match_id = ? AND seat = ?",
                           [(r.rank, r.delivered, match_id, s) for s, r in enumerate(seats)])
        return True

    def abort_match(self, match_id: str) -> bool:
        """Marks a running match aborted (never rated); returns False if it was not running."""
        with self._write() as db:
            cur = db.execute("UPDATE ladder_matches SET status = 'aborted', ended = ?"
                             " WHERE match_id = ? AND status = 'running'",
                             (time.time(), match_id))
            return cur.rowcount == 1

    def running(self) -> list[str]:
        """Returns the ids of matches still marked running (after a crash: cut off)."""
        rows = self._db.execute("SELECT match_id FROM ladder_matches WHERE status = 'running'"
                                " ORDER BY created").fetchall()
        return [r[0] for r in rows]

    # Ratings

    def apply_ratings(self) -> int:
        """Applies every finished, unrated result in finish order; returns how many.

        Each match's new ratings and its ``rated`` marker commit in one transaction,
        so a crash at any point leaves every result rated exactly once or not at all.
        """
        applied = 0
        while True:
            with self._write() as db:
                row = db.execute("SELECT match_id, players FROM ladder_matches"
                                 " WHERE status = 'finished' AND rated = 0"
                                 " ORDER BY finish_order LIMIT 1").fetchone()
                if row is None:
                    return applied
                match_id, players = row
                result = _result_of(db, match_id)
                for scope in (ALL_PLAYERS, players):
                    before = [self._rating(db, scope, name) for name in result.names]
                    after = rate(before, result.ranks)
                    db.executemany(
                        "INSERT INTO ladder_ratings (players, name, mu, sigma) VALUES (?, ?, ?, ?)"
                        " ON CONFLICT (players, name) DO UPDATE SET mu = excluded.mu,"
                        " sigma = excluded.sigma",
                        [(scope, n, r.mu, r.sigma) for n, r in zip(result.names, after,
                                                                    strict=True)])
                db.execute("UPDATE ladder_matches SET rated = 1 WHERE match_id = ?", (match_id,))
            applied += 1

    @staticmethod
    def _rating(db: sqlite3.Connection, scope: int, name: str) -> Rating:
        row = db.execute("SELECT mu, sigma FROM ladder_ratings WHERE players = ? AND name = ?",
                         (scope, name)).fetchone()
        return initial() if row is None else Rating(row[0], row[1])

    def ratings(self, players: int = ALL_PLAYERS) -> dict[str, Rating]:
        """Returns the stored ratings for all matches (0) or one player count."""
        rows = self._db.execute("SELECT name, mu, sigma FROM ladder_ratings WHERE players = ?",
                                (players,)).fetchall()
        return {name: Rating(mu, sigma) for name, mu, sigma in rows}

    def games_played(self) -> dict[str, int]:
        """Returns how many rated matches each bot has played (bots with none left out)."""
        rows = self._db.execute(
            "SELECT r.name, COUNT(*) FROM ladder_results r JOIN ladder_matches m"
            " USING (match_id) WHERE m.rated = 1 GROUP BY r.name").fetchall()
        return {name: int(n) for name, n in rows}

    def rated_results(self, players: int = ALL_PLAYERS) -> list[Result]:
        """Returns the rated results in finish order (all, or one player count)."""
        ids = self._db.execute(
            "SELECT match_id FROM ladder_matches WHERE status = 'finished' AND rated = 1"
            " AND (? = 0 OR players = ?) ORDER BY finish_order", (players, players)).fetchall()
        return [_result_of(self._db, match_id) for (match_id,) in ids]

    def unrated(self) -> int:
        """Returns how many finished results wait to be rated."""
        (n,) = self._db.execute("SELECT COUNT(*) FROM ladder_matches"
                                " WHERE status = 'finished' AND rated = 0").fetchone()
        return int(n)

    def player_counts(self) -> list[int]:
        """Returns the player counts of the rated matches, ascending."""
        rows = self._db.execute("SELECT DISTINCT players FROM ladder_matches WHERE rated = 1"
                                " ORDER BY players").fetchall()
        return [r[0] for r in rows]

    # Reading

    def standings(self, players: int = ALL_PLAYERS) -> tuple[int, list[Standing]]:
        """Returns (rated matches, standings best first) for all matches or one count."""
        db = self._db
        (finished,) = db.execute(
            "SELECT COUNT(*) FROM ladder_matches WHERE rated = 1 AND (? = 0 OR players = ?)",
            (players, players)).fetchone()
        tallies = {
            name: (games, wins, mean)
            for name, games, wins, mean in db.execute(
                "SELECT r.name, COUNT(*), SUM(r.rank = 1), AVG(r.delivered)"
                " FROM ladder_results r JOIN ladder_matches m USING (match_id)"
                " WHERE m.rated = 1 AND (? = 0 OR m.players = ?) GROUP BY r.name",
                (players, players))
        }
        ratings = self.ratings(players)
        order = sorted(ratings, key=lambda n: (-ratings[n].conservative, n))
        table = []
        for rank, name in enumerate(order, start=1):
            r = ratings[name]
            games, wins, mean = tallies.get(name, (0, 0, 0.0))
            table.append(Standing(rank, name, r.conservative, r.mu, r.sigma, games, wins,
                                  float(mean or 0.0)))
        return finished, table

    def matches(self, name: str | None = None, limit: int = 20,
                status: str | None = None) -> list[MatchRow]:
        """Returns ladder matches newest first: all, or those ``name`` played in."""
        query = "SELECT match_id FROM ladder_matches m WHERE 1"
        params: list[object] = []
        if name is not None:
            query += (" AND EXISTS (SELECT 1 FROM ladder_results r"
                      " WHERE r.match_id = m.match_id AND r.name = ?)")
            params.append(name)
        if status is not None:
            query += " AND status = ?"
            params.append(status)
        query += " ORDER BY created DESC, match_id LIMIT ?"
        params.append(limit)
        rows = self._db.execute(query, params).fetchall()
        return [row for (match_id,) in rows if (row := self._row(match_id)) is not None]

    def match(self, match_id: str) -> MatchRow | None:
        """Returns one ladder match, or None when ``match_id`` is not a ladder match."""
        return self._row(match_id)

    def _row(self, match_id: str) -> MatchRow | None:
        head = self._db.execute(
            "SELECT players, status, created FROM ladder_matches WHERE match_id = ?",
            (match_id,)).fetchone()
        if head is None:
            return None
        players, status, created = head
        seats = self._db.execute("SELECT name, rank FROM ladder_results WHERE match_id = ?"
                                 " ORDER BY seat", (match_id,)).fetchall()
        winners = tuple(s for s, (_, rank) in enumerate(seats) if rank == 1)
        return MatchRow(match_id, players, status, created, tuple(n for n, _ in seats),
                        winners if status == "finished" else ())


def _connect(path: str) -> sqlite3.Connection:
    """Returns a connection in autocommit mode (WAL, synced commits), usable from any
    thread: transactions are opened explicitly with BEGIN IMMEDIATE so that the check
    and the write of each guarantee cannot interleave."""
    db = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA busy_timeout=30000")
    return db


def _result_of(db: sqlite3.Connection, match_id: str) -> Result:
    rows = db.execute("SELECT name, rank FROM ladder_results WHERE match_id = ? ORDER BY seat",
                      (match_id,)).fetchall()
    return Result(tuple(n for n, _ in rows), tuple(int(k) for _, k in rows))
