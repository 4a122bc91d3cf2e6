"""The ladder's reads: each one statement, or one snapshot (a read transaction).

Reads cost what they return, never the history: the standings and the scheduler's
inputs come from the ratings and tallies (a row per bot), match lists walk an index
newest first and stop at their limit. :class:`LadderReader` runs the reads that
return a lot (standings, match lists) on a thread with a connection of its own.
"""

from __future__ import annotations

import functools
import hmac
import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ...ladder.ratings import Rating, Result
from ...paging import Page, key_of, page_of
from ...status import MatchStatus
from ..connection import POSTGRESQL, Connection, among, connect, dialect, is_url
from ..reader import Reader
from .discipline import Suspension, spent, suspensions
from .leagues import League, Move, leagues, moves, places
from .rows import (
    ALL_PLAYERS,
    DealSetRow,
    LadderMatch,
    Opponent,
    PositionTally,
    RatedSeat,
    Seated,
    Standing,
    Tally,
    VersionLine,
    hash_key,
    player,
)
from .scrimmages import StoredScrimmage, scrimmages_page

#: How the standings show a bot with several versions: by its best version (the
#: highest conservative rating), or by its newest (the one that first played last).
BEST = "best"
NEWEST = "newest"


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

    def version(self, name: str) -> str | None:
        """Returns the version of the bot's newest entry ("" for the default version),
        or None for a name that is not registered."""
        row = self._db.execute("SELECT version FROM ladder_bots WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

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
        """Returns the stored ratings for all matches (0) or one player count, by
        rated player (a bot's version: ``rows.player``)."""
        rows = self._db.execute(
            "SELECT name, version, mu, sigma FROM ladder_ratings WHERE players = ?", (players,)
        ).fetchall()
        return {player(name, version): Rating(mu, sigma) for name, version, mu, sigma in rows}

    def tallies(self, players: int = ALL_PLAYERS) -> dict[str, Tally]:
        """Returns the stored tallies for all matches (0) or one player count, by
        rated player (``rows.player``; players without a rated game in that scope
        left out)."""
        rows = self._db.execute(
            "SELECT name, version, games, wins, delivered FROM ladder_tallies WHERE players = ?",
            (players,),
        ).fetchall()
        return {
            player(name, version): Tally(games, wins, delivered)
            for name, version, games, wins, delivered in rows
        }

    def versions(self, name: str, players: int = ALL_PLAYERS) -> list[VersionLine]:
        """Returns the bot's rated versions in one scope (all matches, or one player
        count), the one that first played earliest first."""
        rows = self._db.execute(
            "SELECT r.version, r.mu, r.sigma, COALESCE(t.games, 0), COALESCE(t.wins, 0),"
            " t.first_played, t.last_played FROM ladder_ratings r"
            " LEFT JOIN ladder_tallies t ON t.players = r.players AND t.name = r.name"
            " AND t.version = r.version WHERE r.players = ? AND r.name = ?",
            (players, name),
        ).fetchall()
        lines = [
            VersionLine(
                str(v),
                float(mu),
                float(sigma),
                int(g),
                int(w),
                None if first is None else float(first),
                None if last is None else float(last),
            )
            for v, mu, sigma, g, w, first, last in rows
        ]
        return sorted(lines, key=lambda line: (line.first_played or 0.0, line.version))

    def recount(self, players: int = ALL_PLAYERS) -> dict[str, Tally]:
        """Returns the tallies counted afresh from every rated result: what
        :meth:`tallies` must equal (a scan of the whole history: for checks only)."""
        rows = self._db.execute(
            "SELECT r.name, r.version, COUNT(*),"
            " SUM(CASE WHEN r.rank = 1 THEN 1 ELSE 0 END), COALESCE(SUM(r.delivered), 0)"
            " FROM ladder_results r JOIN ladder_matches m ON m.match_id = r.match_id"
            " WHERE m.rated = 1 AND (? = 0 OR m.players = ?) GROUP BY r.name, r.version",
            (players, players),
        ).fetchall()
        return {
            player(name, version): Tally(int(games), int(wins), int(delivered))
            for name, version, games, wins, delivered in rows
        }

    def positions(self, name: str) -> list[PositionTally]:
        """Returns the bot's rated games (all its versions) by player count and seat
        position, ascending."""
        rows = self._db.execute(
            "SELECT players, position, SUM(games), SUM(wins), SUM(rank_sum)"
            " FROM ladder_positions WHERE name = ? GROUP BY players, position"
            " ORDER BY players, position",
            (name,),
        ).fetchall()
        return [PositionTally(*map(int, row)) for row in rows]

    def bot_tallies(self, name: str) -> dict[int, Tally]:
        """Returns the bot's tallies (all its versions) per scope (0: all matches;
        2..5), scopes without a rated game left out."""
        rows = self._db.execute(
            "SELECT players, SUM(games), SUM(wins), SUM(delivered) FROM ladder_tallies"
            " WHERE name = ? GROUP BY players ORDER BY players",
            (name,),
        ).fetchall()
        return {int(p): Tally(int(g), int(w), int(d)) for p, g, w, d in rows}

    def recount_positions(self) -> dict[tuple[int, str, int], tuple[int, int, int]]:
        """Returns (games, wins, rank sum) per (players, bot, position) counted afresh
        from the rated results: what ladder_positions must hold (for checks only)."""
        rows = self._db.execute(
            "SELECT m.players, r.name, r.version, r.position, COUNT(*),"
            " SUM(CASE WHEN r.rank = 1 THEN 1 ELSE 0 END), SUM(r.rank)"
            " FROM ladder_results r JOIN ladder_matches m ON m.match_id = r.match_id"
            " WHERE m.rated = 1 AND r.position IS NOT NULL"
            " GROUP BY m.players, r.name, r.version, r.position"
        ).fetchall()
        return {
            (int(p), player(n, v), int(k)): (int(g), int(w), int(s)) for p, n, v, k, g, w, s in rows
        }

    def stored_positions(self) -> dict[tuple[int, str, int], tuple[int, int, int]]:
        """Returns ladder_positions as :meth:`recount_positions` counts it."""
        rows = self._db.execute(
            "SELECT players, name, version, position, games, wins, rank_sum FROM ladder_positions"
        ).fetchall()
        return {
            (int(p), player(n, v), int(k)): (int(g), int(w), int(s)) for p, n, v, k, g, w, s in rows
        }

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
        """Returns how many rated matches each rated player (a bot's version,
        ``rows.player``) has played (players with none left out)."""
        return {name: t.games for name, t in self.tallies(ALL_PLAYERS).items()}

    def waiting(self, names: Sequence[str]) -> dict[str, tuple[Rating, int]]:
        """Returns the rating over all matches and the rated games of the version each
        of ``names`` entered with last, for those that have played (a row each: what
        the scheduler needs of waiting bots)."""
        return _waiting(self._db, names)

    def seats(self, names: Sequence[str]) -> dict[str, Seated]:
        """Returns the seat each of ``names`` holds in a running ladder match (those
        seated), with its token and the host that runs the match."""
        test, listed = among(self._db, names)
        rows = self._db.execute(
            "SELECT r.name, r.match_id, r.seat, m.players, r.token, m.host, m.address,"
            " m.commitment FROM ladder_matches m"
            " JOIN ladder_results r ON r.match_id = m.match_id"
            f" WHERE m.status = 'running' AND m.announced = 1 AND r.token IS NOT NULL"
            f" AND r.name {test}",
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

    def suspended(self, names: Sequence[str]) -> dict[str, Suspension]:
        """Returns the suspension of each of ``names`` that is suspended."""
        return suspensions(self._db, names)

    def spent(self, names: Sequence[str], now: float, default: int) -> set[str]:
        """Returns those of ``names`` out of matches for the hour before ``now``
        (``server.db.ladder.discipline.spent``)."""
        return spent(self._db, names, now, default)

    def suspension(self, name: str) -> Suspension | None:
        """Returns the bot's suspension, or None (in good standing, or unknown)."""
        return suspensions(self._db, [name]).get(name)

    def entries(self, names: Sequence[str]) -> dict[str, tuple[str, str]]:
        """Returns (host, stream id) of the Enter stream each of ``names`` has open
        (those with one)."""
        test, listed = among(self._db, names)
        rows = self._db.execute(
            f"SELECT name, host, stream FROM ladder_entries WHERE name {test}", (listed,)
        ).fetchall()
        return {name: (host, stream) for name, host, stream in rows}

    def waiting_since(self, host: str, alive_since: float) -> list[float]:
        """Returns, for each bot whose Enter stream is on ``host`` (its entry beat at
        ``alive_since`` or later) and that holds no seat in a running match, since
        when it waits (UNIX time): the end of its newest match, or its entry when
        later. A waiting bot's newest match is read from its newest result (an index)."""
        rows = self._db.execute(
            "SELECT e.entered, (SELECT m.ended FROM ladder_results r"
            " JOIN ladder_matches m ON m.match_id = r.match_id WHERE r.name = e.name"
            " ORDER BY r.created DESC LIMIT 1)"
            " FROM ladder_entries e WHERE e.host = ? AND e.heartbeat >= ?"
            " AND e.name NOT IN (SELECT r.name FROM ladder_matches m"
            " JOIN ladder_results r ON r.match_id = m.match_id"
            " WHERE m.status = 'running')",
            (host, alive_since),
        ).fetchall()
        return [max(entered, ended or entered) for entered, ended in rows]

    def rated_results(self, players: int = ALL_PLAYERS) -> list[Result]:
        """Returns the rated results in finish order (all, or one player count)."""
        ids = self._db.execute(
            "SELECT match_id FROM ladder_matches WHERE status = 'finished' AND rated = 1"
            " AND voided IS NULL AND (? = 0 OR players = ?) ORDER BY finish_order",
            (players, players),
        ).fetchall()
        return [_result_of(self._db, match_id) for (match_id,) in ids]

    def voids(self) -> int:
        """Returns how many matches were voided (read from their index)."""
        (n,) = self._db.execute(
            "SELECT COUNT(*) FROM ladder_matches WHERE voided IS NOT NULL"
        ).fetchone()
        return int(n)

    def unrated(self) -> int:
        """Returns how many finished results wait to be rated."""
        (n,) = self._db.execute(
            "SELECT COUNT(*) FROM ladder_matches WHERE status = 'finished' AND rated = 0"
            " AND voided IS NULL"
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

    def standings(self, players: int = ALL_PLAYERS, by: str = BEST) -> tuple[int, list[Standing]]:
        """Returns (rated matches, standings best first) for all matches or one count:
        a line per bot, showing its best version (``by`` BEST: the highest conservative
        rating) or its newest (NEWEST: the one whose first rated match is the latest)."""
        # One statement (one snapshot), its rows gathered by the database into one JSON
        # text: on a reader thread, one hand-over of the interpreter instead of one a row.
        ((finished, lines),) = self._db.execute(
            *(
                (_STANDINGS_POSTGRESQL, (players, players))
                if self._postgresql
                else (_STANDINGS, (players,))
            )
        ).fetchall()
        shown: dict[str, tuple[Rating, str, int, int, int, str | None, str, float]] = {}
        versions: dict[str, int] = {}
        for name, version, mu, sigma, games, wins, delivered, suspended, first in json.loads(lines):
            line = (Rating(mu, sigma), name, games, wins, delivered, suspended, version, first)
            versions[name] = versions.get(name, 0) + 1
            held = shown.get(name)
            if held is None or _before(line, held, by):
                shown[name] = line
        rated = sorted(shown.values(), key=lambda line: (-line[0].conservative, line[1]))
        ordered = leagues(self._db)
        lowest = ordered[0].name if ordered else ""
        league_of = _league_names(self._db, list(shown)) if ordered else {}
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
                suspended,
                version,
                versions[name],
                league_of.get(name) or lowest,
            )
            for rank, (r, name, games, wins, delivered, suspended, version, _) in enumerate(
                rated, start=1
            )
        ]

    def leagues(self) -> list[League]:
        """Returns the leagues, lowest first (empty: leagues are off)."""
        return leagues(self._db)

    def league_places(self, names: Sequence[str]) -> dict[str, int]:
        """Returns each bot's league as its place, 0 the lowest (empty: leagues off)."""
        return places(self._db, names)

    def moves(self, limit: int = 50, name: str | None = None) -> list[Move]:
        """Returns up to ``limit`` moves between leagues, newest first (all, or one bot's)."""
        return moves(self._db, limit, name)

    def matches(
        self, name: str | None = None, limit: int = 20, status: MatchStatus | None = None
    ) -> list[LadderMatch]:
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

    def match(self, match_id: str) -> LadderMatch | None:
        """Returns one ladder match, or None when ``match_id`` is not a ladder match."""
        rows = self._rows("SELECT CAST(? AS TEXT) AS match_id", (match_id,))
        return rows[0] if rows else None

    def opponents(self, name: str, limit: int) -> list[Opponent]:
        """Returns the bot's results against each opponent over its ``limit`` most
        recent finished matches, most games first."""
        rows = self._db.execute(
            "SELECT o.name, COUNT(*),"
            " SUM(CASE WHEN me.rank < o.rank THEN 1 ELSE 0 END),"
            " SUM(CASE WHEN me.rank = o.rank THEN 1 ELSE 0 END),"
            " SUM(CASE WHEN me.rank > o.rank THEN 1 ELSE 0 END)"
            " FROM (SELECT match_id, rank FROM ladder_results WHERE name = ?"
            "       ORDER BY created DESC, match_id LIMIT ?) me"
            " JOIN ladder_matches m ON m.match_id = me.match_id AND m.status = 'finished'"
            " AND m.voided IS NULL"
            " JOIN ladder_results o ON o.match_id = me.match_id AND o.name != ?"
            " GROUP BY o.name ORDER BY COUNT(*) DESC, o.name",
            (name, limit, name),
        ).fetchall()
        return [Opponent(n, int(g), int(a), int(t), int(b)) for n, g, a, t, b in rows]

    def delivered(self, match_ids: Sequence[str]) -> dict[str, tuple[int, ...]]:
        """Returns the pizzas each seat delivered, in seat order, of those of
        ``match_ids`` that ended with a result."""
        if not match_ids:
            return {}
        test, listed = among(self._db, match_ids)
        seats: dict[str, list[int]] = {}
        for match_id, delivered in self._db.execute(
            f"SELECT match_id, delivered FROM ladder_results WHERE match_id {test}"
            " ORDER BY match_id, seat",
            (listed,),
        ):
            seats.setdefault(match_id, []).append(-1 if delivered is None else int(delivered))
        return {k: tuple(v) for k, v in seats.items() if all(d >= 0 for d in v)}

    def scrimmages_page(
        self, name: str | None, size: int, token: str = ""
    ) -> Page[StoredScrimmage]:
        """Returns a page of scrimmages (``server.db.ladder.scrimmages.scrimmages_page``)."""
        return scrimmages_page(self._db, name, size, token)

    def matches_page(
        self, name: str | None, size: int, token: str = "", status: MatchStatus | None = None
    ) -> Page[LadderMatch]:
        """Returns a page of at most ``size`` ladder matches in :meth:`matches`'s
        order (all, or those ``name`` played in; of any status, or of ``status``):
        the first, or the one after the page whose next token is ``token``.

        Raises BadPageToken for a token this list (the same name and status) did not
        give.
        """
        # Newest first by creation time then id: neither changes for a match, so a
        # match created (or finished) meanwhile never comes twice nor pushes
        # another out of the pages still to come.
        scope = json.dumps([name, status])
        after = key_of(token, "ladder.matches", (float, str), scope)
        table = "r" if name is not None else "m"
        cursor = (
            ""
            if after is None
            else f" AND ({table}.created < ? OR ({table}.created = ? AND {table}.match_id > ?))"
        )
        params: list[object] = [] if name is None else [name]
        if status is not None:
            params.append(status)
        if after is not None:
            params += [after[0], after[0], after[1]]
        if name is not None:
            page = (
                "SELECT m.match_id, r.created FROM ladder_results r"
                " JOIN ladder_matches m ON m.match_id = r.match_id WHERE r.name = ?"
                + (" AND m.status = ?" if status is not None else "")
                + cursor
                + " ORDER BY r.created DESC, r.match_id LIMIT ?"
            )
        else:
            page = (
                "SELECT m.match_id, m.created FROM ladder_matches m WHERE "
                + ("m.status = ?" if status is not None else "1 = 1")
                + cursor
                + " ORDER BY m.created DESC, m.match_id LIMIT ?"
            )
        with self.snapshot():
            # The keys as stored (the rows' JSON text would round the times).
            keyed = self._db.execute(page, (*params, size + 1)).fetchall()
            found = page_of(
                keyed, size, "ladder.matches", lambda r: (float(r[1]), str(r[0])), scope
            )
            ids = [str(r[0]) for r in found.items]
            test, listed = among(self._db, ids)
            rows = self._rows(
                f"SELECT match_id FROM ladder_matches WHERE match_id {test}", (listed,)
            )
        by_id = {m.match_id: m for m in rows}
        return Page([by_id[i] for i in ids if i in by_id], found.next_token)

    def rated_seats(self, after: int, limit: int) -> list[RatedSeat]:
        """Returns the seats of the first ``limit`` rated matches after finish order
        ``after``, in finish order then seat order (``ended``: UNIX time, the creation
        time for a match without an end; each seat's name is its rated player,
        ``rows.player``)."""
        rows = self._db.execute(
            "SELECT m.finish_order, COALESCE(m.ended, m.created), r.name, r.version, r.rank"
            " FROM (SELECT match_id, finish_order, ended, created FROM ladder_matches"
            "       WHERE status = 'finished' AND rated = 1 AND finish_order > ?"
            "       ORDER BY finish_order LIMIT ?) m"
            " JOIN ladder_results r ON r.match_id = m.match_id"
            " ORDER BY m.finish_order, r.seat",
            (after, limit),
        ).fetchall()
        return [RatedSeat(int(o), float(e), player(n, v), int(k)) for o, e, n, v, k in rows]

    def _rows(self, page: str, params: Sequence[object]) -> list[LadderMatch]:
        """Returns the matches whose ids the query ``page`` selects, with their seats:
        one statement (one snapshot), gathered by SQLite into one JSON text."""
        ((listed,),) = self._db.execute(
            (_ROWS_POSTGRESQL if self._postgresql else _ROWS).format(page=page), params
        ).fetchall()
        rows = []
        for (
            match_id,
            players,
            status,
            created,
            commitment,
            set_id,
            set_index,
            void_reason,
            voided_by,
            seats,
        ) in json.loads(listed):
            seated = sorted(seats)
            winners = tuple(seat for seat, _, rank in seated if rank == 1)
            rows.append(
                LadderMatch(
                    match_id,
                    players,
                    MatchStatus(status),
                    created,
                    tuple(name for _, name, _ in seated),
                    winners if status == MatchStatus.FINISHED else (),
                    commitment or "",
                    set_id,
                    int(set_index or 0),
                    void_reason,
                    voided_by or "",
                )
            )
        return rows


class LadderReader(Reader):
    """The ladder's reads that return a lot (standings: a line per bot; match lists:
    up to their limit) on a :class:`~server.db.reader.Reader`: a thread of their own,
    with a connection of their own (opened at once, so that a database that cannot
    be reached fails the ladder's start)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(functools.partial(_connect, str(path)), "ladder-reader")
        self._reads = LadderReads(self.db())

    async def standings(
        self, players: int = ALL_PLAYERS, by: str = BEST
    ) -> tuple[int, list[Standing]]:
        """Returns :meth:`LadderReads.standings`, read on the reader's thread."""
        return await self.run(self._reads.standings, players, by)

    async def leagues(self, limit: int = 50) -> tuple[list[League], list[Move]]:
        """Returns the leagues (lowest first) and up to ``limit`` moves between them
        (newest first), read in one snapshot on the reader's thread."""

        def read() -> tuple[list[League], list[Move]]:
            with self._reads.snapshot():
                return self._reads.leagues(), self._reads.moves(limit)

        return await self.run(read)

    async def matches(
        self, name: str | None = None, limit: int = 20, status: MatchStatus | None = None
    ) -> list[LadderMatch]:
        """Returns :meth:`LadderReads.matches`, read on the reader's thread."""
        return await self.run(self._reads.matches, name, limit, status)

    async def match(self, match_id: str) -> LadderMatch | None:
        """Returns :meth:`LadderReads.match`, read on the reader's thread."""
        return await self.run(self._reads.match, match_id)

    async def bot_stats(
        self, name: str
    ) -> tuple[dict[int, Tally], list[PositionTally], Suspension | None]:
        """Returns the bot's tallies per scope and by seat position, and its
        suspension, read in one snapshot on the reader's thread."""

        def read() -> tuple[dict[int, Tally], list[PositionTally], Suspension | None]:
            with self._reads.snapshot():
                return (
                    self._reads.bot_tallies(name),
                    self._reads.positions(name),
                    self._reads.suspension(name),
                )

        return await self.run(read)

    async def versions(self, name: str, players: int = ALL_PLAYERS) -> list[VersionLine]:
        """Returns :meth:`LadderReads.versions`, read on the reader's thread."""
        return await self.run(self._reads.versions, name, players)

    async def waiting_since(self, host: str, alive_since: float) -> list[float]:
        """Returns :meth:`LadderReads.waiting_since`, read on the reader's thread."""
        return await self.run(self._reads.waiting_since, host, alive_since)

    async def unrated(self) -> int:
        """Returns :meth:`LadderReads.unrated`, read on the reader's thread."""
        return await self.run(self._reads.unrated)

    async def is_registered(self, name: str) -> bool:
        """Returns whether ``name`` is a registered bot, read on the reader's thread."""
        return await self.run(self._reads.is_registered, name)

    async def streams(
        self, names: Sequence[str], now: float, per_hour: int
    ) -> tuple[dict[str, Seated], dict[str, tuple[str, str]], dict[str, Suspension], set[str]]:
        """Returns (:meth:`LadderReads.seats`, :meth:`LadderReads.entries`,
        :meth:`LadderReads.suspended`, those out of matches for the hour before ``now``
        with ``per_hour`` the default quota) of ``names``, read on the reader's thread
        in one snapshot."""
        return await self.run(self._streams, names, now, per_hour)

    def _streams(
        self, names: Sequence[str], now: float, per_hour: int
    ) -> tuple[dict[str, Seated], dict[str, tuple[str, str]], dict[str, Suspension], set[str]]:
        with self._reads.snapshot():
            return (
                self._reads.seats(names),
                self._reads.entries(names),
                self._reads.suspended(names),
                self._reads.spent(names, now, per_hour),
            )

    async def matches_page(
        self, name: str | None, size: int, token: str = "", status: MatchStatus | None = None
    ) -> Page[LadderMatch]:
        """Returns :meth:`LadderReads.matches_page`, read on the reader's thread."""
        return await self.run(self._reads.matches_page, name, size, token, status)

    async def scrimmages_page(
        self, name: str | None, size: int, token: str = ""
    ) -> Page[StoredScrimmage]:
        """Returns a page of scrimmages (``server.db.ladder.scrimmages.scrimmages_page``),
        read on the reader's thread."""
        return await self.run(self._reads.scrimmages_page, name, size, token)


def _connect(path: str) -> Connection:
    """Returns a connection in autocommit mode (synced commits), usable from any
    thread: transactions are opened explicitly (:func:`server.db.connection.transaction`)
    so that the check and the write of each guarantee cannot interleave."""
    if is_url(path):
        return connect(path, durable=True)
    db = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA busy_timeout=30000")
    connection: Connection = db
    return connection


def _before(
    line: tuple[Rating, str, int, int, int, str | None, str, float],
    held: tuple[Rating, str, int, int, int, str | None, str, float],
    by: str,
) -> bool:
    """Returns whether a bot's version ``line`` shows before ``held`` in standings
    ``by`` BEST or NEWEST (ties: the greater version text, so the choice is fixed)."""
    if by == NEWEST:
        return (line[7] or 0.0, line[6]) > (held[7] or 0.0, held[6])
    return (line[0].conservative, line[6]) > (held[0].conservative, held[6])


#: The standings in one JSON text, a row per bot and version (parameters: the scope;
#: on PostgreSQL, twice).
_STANDINGS = (
    "SELECT COALESCE((SELECT matches FROM ladder_totals WHERE players = ?1), 0),"
    " json_group_array(json_array(r.name, r.version, r.mu, r.sigma, COALESCE(t.games, 0),"
    " COALESCE(t.wins, 0), COALESCE(t.delivered, 0), b.suspended, t.first_played))"
    " FROM ladder_ratings r"
    " LEFT JOIN ladder_tallies t ON t.players = r.players AND t.name = r.name"
    " AND t.version = r.version"
    " LEFT JOIN ladder_bots b ON b.name = r.name"
    " WHERE r.players = ?1"
)
_STANDINGS_POSTGRESQL = (
    "SELECT COALESCE((SELECT matches FROM ladder_totals WHERE players = ?), 0),"
    " COALESCE(json_agg(json_build_array(r.name, r.version, r.mu, r.sigma,"
    " COALESCE(t.games, 0), COALESCE(t.wins, 0), COALESCE(t.delivered, 0), b.suspended,"
    " t.first_played))::text, '[]')"
    " FROM ladder_ratings r"
    " LEFT JOIN ladder_tallies t ON t.players = r.players AND t.name = r.name"
    " AND t.version = r.version"
    " LEFT JOIN ladder_bots b ON b.name = r.name"
    " WHERE r.players = ?"
)

#: The matches whose ids the query ``{page}`` selects, with their seats, in one JSON text.
_ROWS = (
    "SELECT json_group_array(json_array(m.match_id, m.players, m.status, m.created,"
    " m.commitment, m.set_id, m.set_index, m.void_reason, m.voided_by,"
    " json((SELECT json_group_array(json_array(r.seat, r.name, r.rank))"
    " FROM ladder_results r WHERE r.match_id = m.match_id))))"
    " FROM ({page}) p JOIN ladder_matches m ON m.match_id = p.match_id"
)
_ROWS_POSTGRESQL = (
    "SELECT COALESCE(json_agg(json_build_array(m.match_id, m.players, m.status, m.created,"
    " m.commitment, m.set_id, m.set_index, m.void_reason, m.voided_by,"
    " (SELECT COALESCE(json_agg(json_build_array(r.seat, r.name, r.rank)), '[]'::json)"
    " FROM ladder_results r WHERE r.match_id = m.match_id)))::text, '[]')"
    " FROM ({page}) p JOIN ladder_matches m ON m.match_id = p.match_id"
)


def _league_names(db: Connection, names: Sequence[str]) -> dict[str, str]:
    """Returns the league of each of ``names`` placed in one (those never moved are not)."""
    if not names:
        return {}
    test, listed = among(db, names)
    rows = db.execute(
        f"SELECT name, league FROM ladder_bots WHERE name {test} AND league IS NOT NULL",
        (listed,),
    ).fetchall()
    return {name: league for name, league in rows}


def _waiting(db: Connection, names: Sequence[str]) -> dict[str, tuple[Rating, int]]:
    test, listed = among(db, names)
    rows = db.execute(
        "SELECT r.name, r.mu, r.sigma, COALESCE(t.games, 0) FROM ladder_ratings r"
        " LEFT JOIN ladder_bots b ON b.name = r.name"
        " LEFT JOIN ladder_tallies t ON t.players = r.players AND t.name = r.name"
        " AND t.version = r.version"
        f" WHERE r.players = 0 AND r.version = COALESCE(b.version, '') AND r.name {test}",
        (listed,),
    ).fetchall()
    return {name: (Rating(mu, sigma), int(games)) for name, mu, sigma, games in rows}


def _result_of(db: Connection, match_id: str) -> Result:
    rows = db.execute(
        "SELECT name, version, rank FROM ladder_results WHERE match_id = ? ORDER BY seat",
        (match_id,),
    ).fetchall()
    return Result(tuple(player(n, v) for n, v, _ in rows), tuple(int(k) for _, _, k in rows))
