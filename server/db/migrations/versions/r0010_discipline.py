"""Discipline on the ladder: which seats the default policy took over, and each
bot's count of entries in its current hour (server.db.ladder.discipline).

``ladder_results.autopilot``: 1 when the server's default policy played the seat to
the end of its match (strikes in a row: late answers, or no stream open), 0 when the
bot played it, NULL for a result stored before this revision. Quarantine reads it
over a bot's last matches. ``ladder_bots.entries_since`` and ``entries``: when the
bot's current hour of Enter calls began and how many it made since, for the quota
on entries (``quota_entries``). ``ladder_matches_voided``: the voided matches, so
that counting them (the web page's rating history starts again after a void) reads
only them.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def _statements(real: str) -> list[str]:
    return [
        "ALTER TABLE ladder_results ADD COLUMN autopilot INTEGER",
        f"ALTER TABLE ladder_bots ADD COLUMN entries_since {real}",
        "ALTER TABLE ladder_bots ADD COLUMN entries INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX ladder_matches_voided ON ladder_matches (voided) WHERE voided IS NOT NULL",
    ]


UPGRADE: list[str] = _statements("REAL")
POSTGRESQL: list[str] = _statements("DOUBLE PRECISION")

DOWNGRADE: list[str] = [
    "DROP INDEX ladder_matches_voided",
    "ALTER TABLE ladder_bots DROP COLUMN entries",
    "ALTER TABLE ladder_bots DROP COLUMN entries_since",
    "ALTER TABLE ladder_results DROP COLUMN autopilot",
]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRESQL if postgresql else UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
