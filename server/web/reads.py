"""What the page reads from the database: a thread of its own with a read-only
connection, so that the event loop never waits for the disk.

The ladder's reads are the store's own (``server.ladder.store.LadderReads``) over
this connection; the reads the store has no method for (a bot's results against
each opponent, the pizzas of listed matches, a stored record) are here, each one
statement bounded in rows.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, TypeVar

from ..ladder.store import ALL_PLAYERS, LadderReads, MatchRow, Standing, Tally

P = ParamSpec("P")
T = TypeVar("T")

#: A bot's results against each opponent count its most recent matches only.
OPPONENT_MATCHES = 500


@dataclass(frozen=True, slots=True)
class Opponent:
    """How one bot fared against one opponent in the matches they shared."""

    name: str
    games: int
    ahead: int  # the bot ranked better
    tied: int
    behind: int


@dataclass(frozen=True, slots=True)
class StoredMatch:
    """A match as the server stored it: its status, seats, scores and record."""

    match_id: str
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
    record: str | None


def connect_read_only(path: str | Path) -> sqlite3.Connection:
    """Returns a read-only connection to the server's database file, usable from the
    reader's one thread."""
    db = sqlite3.connect(
        f"file:{Path(path).resolve()}?mode=ro",
        uri=True,
        timeout=30.0,
        isolation_level=None,
        check_same_thread=False,
    )
    db.execute("PRAGMA busy_timeout=30000")
    return db


class Reads:
    """The page's reads, run one at a time on a thread with their own connection."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="web-reader")
        self._db: sqlite3.Connection | None = None
        self._ladder: LadderReads | None = None

    async def run(self, read: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Returns ``read(*args, **kwargs)`` run on the reader's thread."""
        return await asyncio.wrap_future(self._pool.submit(read, *args, **kwargs))

    def db(self) -> sqlite3.Connection:
        """Returns the reader's connection (opened on first use, on the reader's thread)."""
        if self._db is None:
            self._db = connect_read_only(self.path)
        return self._db

    def ladder(self) -> LadderReads:
        """Returns the store's reads over the reader's connection."""
        if self._ladder is None:
            self._ladder = LadderReads(self.db())
        return self._ladder

    def close(self) -> None:
        """Waits for the reads under way, then closes the connection."""
        self._pool.shutdown(wait=True)
        if self._db is not None:
            self._db.close()

    # -- on the reader's thread ------------------------------------------------------

    def standings(self) -> dict[int, tuple[int, list[Standing]]]:
        """Returns (rated matches, standings) for all matches (key 0) and each player
        count that has rated matches."""
        ladder = self.ladder()
        with ladder.snapshot():
            scopes = [ALL_PLAYERS, *ladder.player_counts()]
            return {scope: ladder.standings(scope) for scope in scopes}

    def tallies(self, name: str) -> dict[int, Tally]:
        """Returns the bot's tallies per player count (counts it has not played left out)."""
        ladder = self.ladder()
        out = {}
        with ladder.snapshot():
            for players in ladder.player_counts():
                tally = ladder.tallies(players).get(name)
                if tally is not None:
                    out[players] = tally
        return out

    def opponents(self, name: str, limit: int = OPPONENT_MATCHES) -> list[Opponent]:
        """Returns the bot's results against each opponent over its ``limit`` most
        recent finished matches, most games first."""
        rows = (
            self.db()
            .execute(
                "SELECT o.name, COUNT(*), TOTAL(me.rank < o.rank), TOTAL(me.rank = o.rank),"
                " TOTAL(me.rank > o.rank)"
                " FROM (SELECT match_id, rank FROM ladder_results WHERE name = ?"
                "       ORDER BY created DESC, match_id LIMIT ?) me"
                " JOIN ladder_matches m ON m.match_id = me.match_id AND m.status = 'finished'"
                " JOIN ladder_results o ON o.match_id = me.match_id AND o.name != ?"
                " GROUP BY o.name ORDER BY COUNT(*) DESC, o.name",
                (name, limit, name),
            )
            .fetchall()
        )
        return [Opponent(n, int(g), int(a), int(t), int(b)) for n, g, a, t, b in rows]

    def matches(
        self, name: str | None, limit: int
    ) -> tuple[list[MatchRow], dict[str, tuple[int, ...]]]:
        """Returns up to ``limit`` ladder matches newest first (those ``name`` played
        in, or all), with the pizzas each seat delivered in those that ended."""
        ladder = self.ladder()
        with ladder.snapshot():
            rows = ladder.matches(name, limit)
            return rows, self._delivered([r.match_id for r in rows])

    def _delivered(self, ids: Sequence[str]) -> dict[str, tuple[int, ...]]:
        if not ids:
            return {}
        seats: dict[str, list[int]] = {}
        for match_id, delivered in self.db().execute(
            "SELECT match_id, delivered FROM ladder_results"
            " WHERE match_id IN (SELECT value FROM json_each(?)) ORDER BY match_id, seat",
            (json.dumps(list(ids)),),
        ):
            seats.setdefault(match_id, []).append(-1 if delivered is None else int(delivered))
        return {k: tuple(v) for k, v in seats.items() if all(d >= 0 for d in v)}

    def stored(self, match_id: str) -> StoredMatch | None:
        """Returns the match as the server stored it, record included, or None."""
        r = (
            self.db()
            .execute(
                "SELECT id, status, players, names, ladder, created, ended, winners, ranks,"
                " delivered, reason, record FROM matches WHERE id = ?",
                (match_id,),
            )
            .fetchone()
        )
        if r is None:
            return None
        return StoredMatch(
            r[0],
            r[1],
            int(r[2]),
            tuple(json.loads(r[3])),
            bool(r[4]),
            r[5],
            r[6],
            tuple(json.loads(r[7] or "[]")),
            tuple(json.loads(r[8] or "[]")),
            tuple(json.loads(r[9] or "[]")),
            r[10],
            r[11],
        )
