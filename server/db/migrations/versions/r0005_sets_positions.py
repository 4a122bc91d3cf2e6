"""Duplicate sets and results by seat position.

``ladder_sets``: one row per duplicate set (``mammamia serve --ladder-duplicate``):
its players, the bots in the first match's seat order, the set's server seed (kept
secret until the set ends, then revealed in its records), its commitment, and its
status: ``playing``, ``complete`` (every rotation played) or ``cut`` (cut short, the
reason in ``reason``). ``ladder_matches`` gains the match's ``commitment`` and its
place in a set (``set_id``, ``set_index``; NULL for a match played alone).

``ladder_results.position`` is the seat's place in round 1's playing order (1: the
first player, R-SETUP-6), filled here from the stored records' ``first_player``;
``ladder_positions`` tallies, per player count, bot and position, the rated games,
wins and summed ranks, kept by ``LadderStore.apply_ratings`` with the other tallies
and filled here from the results already rated.

On PostgreSQL (:data:`POSTGRESQL`) the record is read with ``->>`` and the times
are ``DOUBLE PRECISION``.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_SETS = """
    CREATE TABLE ladder_sets (
        set_id      TEXT PRIMARY KEY,
        players     INTEGER NOT NULL,
        names       TEXT NOT NULL,
        server_seed TEXT NOT NULL,
        commitment  TEXT NOT NULL,
        status      TEXT NOT NULL DEFAULT 'playing',
        created     {time} NOT NULL,
        ended       {time},
        reason      TEXT
    )
    """

_POSITIONS = """
    CREATE TABLE ladder_positions (
        players  INTEGER NOT NULL,
        name     TEXT NOT NULL,
        position INTEGER NOT NULL,
        games    INTEGER NOT NULL,
        wins     INTEGER NOT NULL,
        rank_sum INTEGER NOT NULL,
        PRIMARY KEY (players, name, position)
    )
    """

_FILL_POSITIONS = """
    INSERT INTO ladder_positions (players, name, position, games, wins, rank_sum)
    SELECT m.players, r.name, r.position, COUNT(*),
           SUM(CASE WHEN r.rank = 1 THEN 1 ELSE 0 END), SUM(r.rank)
    FROM ladder_results r JOIN ladder_matches m ON m.match_id = r.match_id
    WHERE m.rated = 1 AND r.position IS NOT NULL
    GROUP BY m.players, r.name, r.position
    """

_COLUMNS = [
    "ALTER TABLE ladder_matches ADD COLUMN commitment TEXT",
    "ALTER TABLE ladder_matches ADD COLUMN set_id TEXT",
    "ALTER TABLE ladder_matches ADD COLUMN set_index INTEGER",
    "CREATE INDEX ladder_matches_by_set ON ladder_matches (set_id, set_index)"
    " WHERE set_id IS NOT NULL",
    "ALTER TABLE ladder_results ADD COLUMN position INTEGER",
]

UPGRADE: list[str] = [
    _SETS.format(time="REAL"),
    *_COLUMNS,
    """
    UPDATE ladder_results SET position = (
        SELECT (ladder_results.seat - json_extract(s.record, '$.first_player')
                + m.players) % m.players + 1
        FROM matches s JOIN ladder_matches m ON m.match_id = s.id
        WHERE s.id = ladder_results.match_id AND s.record IS NOT NULL
          AND json_valid(s.record))
    """,
    _POSITIONS,
    _FILL_POSITIONS,
]

POSTGRESQL: list[str] = [
    _SETS.format(time="DOUBLE PRECISION"),
    *_COLUMNS,
    """
    UPDATE ladder_results SET position = (
        SELECT (ladder_results.seat - (s.record::json ->> 'first_player')::integer
                + m.players) % m.players + 1
        FROM matches s JOIN ladder_matches m ON m.match_id = s.id
        WHERE s.id = ladder_results.match_id AND s.record IS NOT NULL)
    """,
    _POSITIONS,
    _FILL_POSITIONS,
]

DOWNGRADE: list[str] = [
    "DROP TABLE ladder_positions",
    "ALTER TABLE ladder_results DROP COLUMN position",
    "DROP INDEX ladder_matches_by_set",
    "ALTER TABLE ladder_matches DROP COLUMN set_index",
    "ALTER TABLE ladder_matches DROP COLUMN set_id",
    "ALTER TABLE ladder_matches DROP COLUMN commitment",
    "DROP TABLE ladder_sets",
]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRESQL if postgresql else UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
