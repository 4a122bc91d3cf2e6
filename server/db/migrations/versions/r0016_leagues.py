"""Leagues with boss bots (``mammamia serve --leagues``; docs/ladder.md, "Leagues").

``ladder_leagues``: the leagues in order, lowest first (``position`` from 0), as the
server was started with: each league's name, the name of its boss (a ladder bot the
server plays itself, NULL for a last league without one), the built-in bot that
plays the boss (``spec``, as ``mammamia bot`` takes it) and ``sigmas``, the width of
the lower bounds that are compared (a bot moves up when its ``mu - sigmas * sigma``
passes its boss's). An empty table: leagues are off.

``ladder_bots.league``: the name of the league the bot plays in (NULL: the lowest).

``ladder_moves``: one row per move of a bot from one league to the next: when (the
end of the rated match after which it moved, UNIX time), from, to, why, and the
match. A move is decided in the transaction that rates that match, under the
ladder's lock, so one host decides it, once.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def _statements(real: str) -> list[str]:
    return [
        "ALTER TABLE ladder_bots ADD COLUMN league TEXT",
        f"""
        CREATE TABLE ladder_leagues (
            position INTEGER PRIMARY KEY,
            name     TEXT NOT NULL UNIQUE,
            boss     TEXT,
            spec     TEXT,
            sigmas   {real} NOT NULL
        )
        """,
        f"""
        CREATE TABLE ladder_moves (
            name        TEXT NOT NULL,
            at          {real} NOT NULL,
            from_league TEXT NOT NULL,
            to_league   TEXT NOT NULL,
            why         TEXT NOT NULL,
            match_id    TEXT
        )
        """,
        "CREATE INDEX ladder_moves_by_time ON ladder_moves (at DESC)",
    ]


UPGRADE: list[str] = _statements("REAL")
POSTGRESQL: list[str] = _statements("DOUBLE PRECISION")

DOWNGRADE: list[str] = [
    "DROP TABLE ladder_moves",
    "DROP TABLE ladder_leagues",
    "ALTER TABLE ladder_bots DROP COLUMN league",
]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRESQL if postgresql else UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
