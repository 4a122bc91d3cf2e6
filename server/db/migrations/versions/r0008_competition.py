"""A competition: its phase stamps, its finals' field, tables and matches, and its
final table (server.db.competition, server.competition).

``competitions``: one row per competition a server has run (by its name): the
competition file's text as first run, when it started (the moment the file's
offsets count from), the finals field fixed at the freeze, the final table with the
reason the finals stopped, and when (and by whom) its results were released.
``competition_stamps``: every phase change, in order: the phase, when, who made it
("schedule", or the organiser) and why. ``competition_tables``: each finals table,
played as a duplicate set: its round, its finalists, its server seed and the
commitment to it. ``competition_matches``: each finals match: its set and place in
it, its seats' names, its commitment, how it ended (ranks and pizzas per seat), and
the finalists that were absent when it formed.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def _statements(real: str) -> list[str]:
    return [
        f"""
        CREATE TABLE competitions (
            name         TEXT PRIMARY KEY,
            file         TEXT NOT NULL,
            started      {real} NOT NULL,
            field        TEXT,
            final        TEXT,
            final_reason TEXT,
            released     {real},
            released_by  TEXT
        )
        """,
        f"""
        CREATE TABLE competition_stamps (
            competition TEXT NOT NULL,
            seq         INTEGER NOT NULL,
            phase       TEXT NOT NULL,
            at          {real} NOT NULL,
            who         TEXT NOT NULL,
            reason      TEXT NOT NULL,
            PRIMARY KEY (competition, seq)
        )
        """,
        """
        CREATE TABLE competition_tables (
            set_id      TEXT PRIMARY KEY,
            competition TEXT NOT NULL,
            round       INTEGER NOT NULL,
            table_no    INTEGER NOT NULL,
            names       TEXT NOT NULL,
            server_seed TEXT NOT NULL,
            commitment  TEXT NOT NULL,
            revealed    INTEGER NOT NULL DEFAULT 0
        )
        """,
        f"""
        CREATE TABLE competition_matches (
            match_id    TEXT PRIMARY KEY,
            competition TEXT NOT NULL,
            set_id      TEXT NOT NULL,
            set_index   INTEGER NOT NULL,
            round       INTEGER NOT NULL,
            names       TEXT NOT NULL,
            commitment  TEXT NOT NULL,
            status      TEXT NOT NULL,
            ranks       TEXT,
            delivered   TEXT,
            absent      TEXT NOT NULL,
            created     {real} NOT NULL,
            ended       {real}
        )
        """,
        "CREATE INDEX competition_matches_by_competition"
        " ON competition_matches (competition, created)",
    ]


UPGRADE: list[str] = _statements("REAL")
POSTGRESQL: list[str] = _statements("DOUBLE PRECISION")

DOWNGRADE: list[str] = [
    "DROP INDEX competition_matches_by_competition",
    "DROP TABLE competition_matches",
    "DROP TABLE competition_tables",
    "DROP TABLE competition_stamps",
    "DROP TABLE competitions",
]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRESQL if postgresql else UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
