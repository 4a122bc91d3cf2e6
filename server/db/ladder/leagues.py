"""The ladder's leagues in the database: their order and bosses, each bot's league,
and the moves from one league to the next (``server.ladder.leagues``; revision 0014).

A move is decided by :func:`promote`, inside the transaction that rates a match
(``server.db.ladder.rating.apply_next``), under the ladder's lock: on many hosts
sharing PostgreSQL one host decides it, once, and replaying the ratings
(:func:`reset`, then every result again) replays the moves at the same times.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ...ladder.ratings import Rating, initial
from ...quoting import quoted
from ..connection import Connection, among
from .rows import ALL_PLAYERS, DEFAULT_VERSION, LadderError

#: What a boss's ``key_hash`` holds: no key hashes to it, so no one enters as a boss.
BOSS_KEY = ""


@dataclass(frozen=True, slots=True)
class League:
    """One league: its name, its boss's bot name and the built-in bot that plays it
    (both None for a last league without a boss), and ``sigmas``, the width of the
    lower bounds compared to leave it."""

    name: str
    boss: str | None = None
    spec: str | None = None
    sigmas: float = 2.0


@dataclass(frozen=True, slots=True)
class Move:
    """A bot's move from one league to the next: who, when (UNIX time), from, to, why,
    and the rated match after which it moved."""

    name: str
    at: float
    from_league: str
    to_league: str
    why: str
    match_id: str | None


def configure(db: Connection, leagues: Sequence[League], now: float | None = None) -> None:
    """Stores ``leagues`` (lowest first; none: leagues off) in the caller's transaction,
    registering each boss as a ladder bot that no key enters, placed in its league.

    Raises LadderError when a boss's name is a bot's that someone registered."""
    names = [league.boss for league in leagues if league.boss is not None]
    if names:
        test, listed = among(db, names)
        for name, key_hash in db.execute(
            f"SELECT name, key_hash FROM ladder_bots WHERE name {test}", (listed,)
        ).fetchall():
            if key_hash != BOSS_KEY:
                raise LadderError(
                    f"the boss name {quoted(name)} is a registered bot's: rename its league"
                )
    db.execute("DELETE FROM ladder_leagues")
    stamp = time.time() if now is None else now
    for position, league in enumerate(leagues):
        db.execute(
            "INSERT INTO ladder_leagues (position, name, boss, spec, sigmas)"
            " VALUES (?, ?, ?, ?, ?)",
            (position, league.name, league.boss, league.spec, league.sigmas),
        )
        if league.boss is not None:
            db.execute(
                "INSERT INTO ladder_bots (name, key_hash, created, entered, league)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET league = excluded.league",
                (league.boss, BOSS_KEY, stamp, stamp, league.name),
            )


def leagues(db: Connection) -> list[League]:
    """Returns the leagues, lowest first (empty: leagues are off)."""
    rows = db.execute(
        "SELECT name, boss, spec, sigmas FROM ladder_leagues ORDER BY position"
    ).fetchall()
    return [League(name, boss, spec, float(sigmas)) for name, boss, spec, sigmas in rows]


def places(db: Connection, names: Sequence[str]) -> dict[str, int]:
    """Returns the league of each of ``names`` as its place in the order (0: the lowest,
    also for a bot never moved or in a league no longer held); empty when leagues are
    off."""
    order = {league.name: i for i, league in enumerate(leagues(db))}
    if not order or not names:
        return {}
    test, listed = among(db, names)
    rows = db.execute(
        f"SELECT name, league FROM ladder_bots WHERE name {test}", (listed,)
    ).fetchall()
    found = {name: order.get(league, 0) if league is not None else 0 for name, league in rows}
    return {name: found.get(name, 0) for name in names}


def bosses(db: Connection) -> list[str]:
    """Returns the bosses' names (empty when leagues are off)."""
    return [
        boss
        for (boss,) in db.execute(
            "SELECT boss FROM ladder_leagues WHERE boss IS NOT NULL ORDER BY position"
        ).fetchall()
    ]


def moves(db: Connection, limit: int = 50, name: str | None = None) -> list[Move]:
    """Returns up to ``limit`` moves, newest first: of every bot, or of ``name``."""
    which, params = (" WHERE name = ?", (name,)) if name is not None else ("", ())
    rows = db.execute(
        "SELECT name, at, from_league, to_league, why, match_id FROM ladder_moves"
        + which
        + " ORDER BY at DESC, to_league LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [Move(n, float(at), f, t, why, m) for n, at, f, t, why, m in rows]


def promote(
    db: Connection, match_id: str, ended: float, seats: Sequence[tuple[str, str]]
) -> list[Move]:
    """Moves up, one league each, the bots of a rated match (``seats``: name and
    version) whose rating's lower bound now passes their boss's, in the caller's
    transaction (the one that rated the match); returns the moves, stamped at the
    match's end. A boss, a bot of a league without a boss and a bot of the last
    league never move."""
    held = leagues(db)
    if not held:
        return []
    order = {league.name: i for i, league in enumerate(held)}
    boss_names = {league.boss for league in held if league.boss is not None}
    made = []
    for name, version in seats:
        if name in boss_names:
            continue
        row = db.execute("SELECT league FROM ladder_bots WHERE name = ?", (name,)).fetchone()
        place = order.get(row[0], 0) if row is not None and row[0] is not None else 0
        league = held[place]
        if league.boss is None or place + 1 >= len(held):
            continue
        low = _low(_rating(db, name, version), league.sigmas)
        boss_low = _low(_rating(db, league.boss, DEFAULT_VERSION), league.sigmas)
        if low <= boss_low:
            continue
        up = held[place + 1]
        why = (
            f"its lower bound {low:.2f} passed {league.boss}'s {boss_low:.2f}"
            f" (mu - {league.sigmas:g} sigma)"
        )
        db.execute("UPDATE ladder_bots SET league = ? WHERE name = ?", (up.name, name))
        db.execute(
            "INSERT INTO ladder_moves (name, at, from_league, to_league, why, match_id)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (name, ended, league.name, up.name, why, match_id),
        )
        made.append(Move(name, ended, league.name, up.name, why, match_id))
    return made


def reset(db: Connection) -> None:
    """Puts every bot but the bosses back in the lowest league and forgets the moves,
    in the caller's transaction: before the ratings are replayed from the start, which
    replays the moves."""
    db.execute("DELETE FROM ladder_moves")
    db.execute(
        "UPDATE ladder_bots SET league = NULL WHERE key_hash != ? AND league IS NOT NULL",
        (BOSS_KEY,),
    )


def _low(rating: Rating, sigmas: float) -> float:
    return rating.mu - sigmas * rating.sigma


def _rating(db: Connection, name: str, version: str) -> Rating:
    row = db.execute(
        "SELECT mu, sigma FROM ladder_ratings WHERE players = ? AND name = ? AND version = ?",
        (ALL_PLAYERS, name, version),
    ).fetchone()
    return initial() if row is None else Rating(row[0], row[1])
