"""Ladder tallies, and indexes that make every ladder read independent of history size.

``ladder_tallies``: per bot and scope (players 0: all matches, 2..5: matches of that
many players) the rated games, wins (rank 1, shared or not) and pizzas delivered
(summed); ``ladder_totals``: the rated matches per scope. Both are kept by
``LadderStore.apply_ratings`` in the transaction that rates each result, and are
filled here from the results already rated.

``ladder_results.created`` (the match's creation time, copied at its start) lets a
bot's matches be listed newest first from one index; the other indexes serve the
list of all matches, the matches of one status, and the next result to rate.

On PostgreSQL (:data:`POSTGRESQL`) the tallies are filled with ``SUM`` and ``CASE``
(SQLite's ``TOTAL`` and its booleans as numbers are its own), and the new column is
``DOUBLE PRECISION``.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

UPGRADE: list[str] = [
    """
    CREATE TABLE ladder_tallies (
        players   INTEGER NOT NULL,           -- 0: all matches; 2..5: that many players
        name      TEXT NOT NULL,
        games     INTEGER NOT NULL,           -- rated matches played
        wins      INTEGER NOT NULL,           -- of them, ranked first (alone or tied)
        delivered INTEGER NOT NULL,           -- pizzas delivered in them, summed
        PRIMARY KEY (players, name)
    )
    """,
    """
    CREATE TABLE ladder_totals (
        players INTEGER PRIMARY KEY,          -- 0: all matches; 2..5: that many players
        matches INTEGER NOT NULL              -- rated matches
    )
    """,
    """
    INSERT INTO ladder_tallies (players, name, games, wins, delivered)
    SELECT 0, r.name, COUNT(*), TOTAL(r.rank = 1), TOTAL(r.delivered)
    FROM ladder_results r JOIN ladder_matches m ON m.match_id = r.match_id
    WHERE m.rated = 1
    GROUP BY r.name
    """,
    """
    INSERT INTO ladder_tallies (players, name, games, wins, delivered)
    SELECT m.players, r.name, COUNT(*), TOTAL(r.rank = 1), TOTAL(r.delivered)
    FROM ladder_results r JOIN ladder_matches m ON m.match_id = r.match_id
    WHERE m.rated = 1
    GROUP BY m.players, r.name
    """,
    """
    INSERT INTO ladder_totals (players, matches)
    SELECT 0, COUNT(*) FROM ladder_matches WHERE rated = 1 HAVING COUNT(*) > 0
    """,
    """
    INSERT INTO ladder_totals (players, matches)
    SELECT players, COUNT(*) FROM ladder_matches WHERE rated = 1 GROUP BY players
    """,
    "ALTER TABLE ladder_results ADD COLUMN created REAL",
    """
    UPDATE ladder_results SET created = (
        SELECT m.created FROM ladder_matches m WHERE m.match_id = ladder_results.match_id)
    """,
    "DROP INDEX IF EXISTS ladder_results_by_name",
    "CREATE INDEX ladder_results_newest ON ladder_results (name, created DESC, match_id)",
    "CREATE INDEX ladder_matches_newest ON ladder_matches (created DESC, match_id)",
    """
    CREATE INDEX ladder_matches_by_status
    ON ladder_matches (status, created DESC, match_id)
    """,
    """
    CREATE INDEX ladder_matches_unrated ON ladder_matches (status, rated, finish_order)
    WHERE rated = 0
    """,
]

POSTGRESQL: list[str] = [
    *UPGRADE[:2],
    """
    INSERT INTO ladder_tallies (players, name, games, wins, delivered)
    SELECT 0, r.name, COUNT(*), SUM(CASE WHEN r.rank = 1 THEN 1 ELSE 0 END),
           COALESCE(SUM(r.delivered), 0)
    FROM ladder_results r JOIN ladder_matches m ON m.match_id = r.match_id
    WHERE m.rated = 1
    GROUP BY r.name
    """,
    """
    INSERT INTO ladder_tallies (players, name, games, wins, delivered)
    SELECT m.players, r.name, COUNT(*), SUM(CASE WHEN r.rank = 1 THEN 1 ELSE 0 END),
           COALESCE(SUM(r.delivered), 0)
    FROM ladder_results r JOIN ladder_matches m ON m.match_id = r.match_id
    WHERE m.rated = 1
    GROUP BY m.players, r.name
    """,
    *UPGRADE[4:6],
    "ALTER TABLE ladder_results ADD COLUMN created DOUBLE PRECISION",
    *UPGRADE[7:],
]

DOWNGRADE: list[str] = [
    "DROP INDEX ladder_matches_unrated",
    "DROP INDEX ladder_matches_by_status",
    "DROP INDEX ladder_matches_newest",
    "DROP INDEX ladder_results_newest",
    "CREATE INDEX ladder_results_by_name ON ladder_results (name, match_id)",
    "ALTER TABLE ladder_results DROP COLUMN created",
    "DROP TABLE ladder_totals",
    "DROP TABLE ladder_tallies",
]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRESQL if postgresql else UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
