"""When each ladder bot first entered: names that never enter can expire.

``ladder_bots.entered`` is the time a bot first opened an Enter stream with its key,
NULL while it never has. A bot that has played a match before this revision counts as
entered at its first match's creation; the others count as never entered (and expire
like any name registered that long ago, see docs/ladder.md). The partial index keeps
counting and expiring the names that never entered independent of every other bot.

On PostgreSQL (:data:`POSTGRESQL`) the new column is ``DOUBLE PRECISION``.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

UPGRADE: list[str] = [
    "ALTER TABLE ladder_bots ADD COLUMN entered REAL",
    """
    UPDATE ladder_bots SET entered = (
        SELECT MIN(r.created) FROM ladder_results r WHERE r.name = ladder_bots.name)
    """,
    "CREATE INDEX ladder_bots_unentered ON ladder_bots (created) WHERE entered IS NULL",
]

POSTGRESQL: list[str] = [
    "ALTER TABLE ladder_bots ADD COLUMN entered DOUBLE PRECISION",
    *UPGRADE[1:],
]

DOWNGRADE: list[str] = [
    "DROP INDEX ladder_bots_unentered",
    "ALTER TABLE ladder_bots DROP COLUMN entered",
]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRESQL if postgresql else UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
