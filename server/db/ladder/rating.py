"""Applying stored results to the ratings and tallies: in finish order, exactly once.

Each match's new ratings, its tallies and its ``rated`` marker commit in one
transaction, so a crash at any point leaves every result rated and counted exactly
once or not at all (the tallies always equal a count over the rated results).
"""

from __future__ import annotations

from ...ladder.ratings import Rating, initial, rate
from ..connection import Connection
from .leagues import promote
from .rows import ALL_PLAYERS


def apply_next(db: Connection) -> bool:
    """Applies the first finished, unrated result in finish order (a voided one never
    counts), in the caller's transaction; returns False when there is none. Each
    seat's player is its bot's version (``server.db.ladder.rows.player``). With
    leagues on, the bots the match lifts past their boss move up
    (``server.db.ladder.leagues.promote``)."""
    row = db.execute(
        "SELECT match_id, players, COALESCE(ended, created) FROM ladder_matches"
        " WHERE status = 'finished' AND rated = 0 AND voided IS NULL"
        " ORDER BY finish_order LIMIT 1"
    ).fetchone()
    if row is None:
        return False
    match_id, players, ended = row
    placed = db.execute(
        "SELECT name, version, rank, delivered, position FROM ladder_results"
        " WHERE match_id = ? ORDER BY seat",
        (match_id,),
    ).fetchall()
    seats = [(n, v, k, d) for n, v, k, d, _ in placed]
    ranks = tuple(int(k) for _, _, k, _ in seats)
    db.executemany(
        "INSERT INTO ladder_positions (players, name, version, position, games, wins,"
        " rank_sum) VALUES (?, ?, ?, ?, 1, ?, ?)"
        " ON CONFLICT (players, name, version, position)"
        " DO UPDATE SET games = ladder_positions.games + 1,"
        " wins = ladder_positions.wins + excluded.wins,"
        " rank_sum = ladder_positions.rank_sum + excluded.rank_sum",
        [(players, n, v, p, int(k == 1), int(k)) for n, v, k, _, p in placed if p is not None],
    )
    for scope in (ALL_PLAYERS, players):
        before = [_rating(db, scope, name, version) for name, version, _, _ in seats]
        after = rate(before, ranks)
        db.executemany(
            "INSERT INTO ladder_ratings (players, name, version, mu, sigma)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (players, name, version)"
            " DO UPDATE SET mu = excluded.mu, sigma = excluded.sigma",
            [(scope, n, v, r.mu, r.sigma) for (n, v, _, _), r in zip(seats, after, strict=True)],
        )
        db.executemany(
            "INSERT INTO ladder_tallies (players, name, version, games, wins, delivered,"
            " first_played, last_played) VALUES (?, ?, ?, 1, ?, ?, ?, ?)"
            " ON CONFLICT (players, name, version) DO UPDATE SET"
            " games = ladder_tallies.games + 1,"
            " wins = ladder_tallies.wins + excluded.wins,"
            " delivered = ladder_tallies.delivered + excluded.delivered,"
            " first_played = COALESCE(ladder_tallies.first_played, excluded.first_played),"
            " last_played = excluded.last_played",
            [(scope, n, v, int(k == 1), d or 0, ended, ended) for n, v, k, d in seats],
        )
        db.execute(
            "INSERT INTO ladder_totals (players, matches) VALUES (?, 1)"
            " ON CONFLICT (players) DO UPDATE SET"
            " matches = ladder_totals.matches + 1",
            (scope,),
        )
    db.execute("UPDATE ladder_matches SET rated = 1 WHERE match_id = ?", (match_id,))
    # With leagues on, the match may move its bots up (decided here, once).
    promote(db, match_id, ended, [(n, v) for n, v, _, _ in seats])
    return True


def _rating(db: Connection, scope: int, name: str, version: str) -> Rating:
    row = db.execute(
        "SELECT mu, sigma FROM ladder_ratings WHERE players = ? AND name = ? AND version = ?",
        (scope, name, version),
    ).fetchone()
    return initial() if row is None else Rating(row[0], row[1])
