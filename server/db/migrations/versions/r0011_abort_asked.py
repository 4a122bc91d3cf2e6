"""An abort asked of the host that runs a ladder match (server.ladder.discipline).

``ladder_matches.abort_asked``: why an operator, through another host of a shared
database, asked for the running match to be aborted (NULL: nobody did). The host
that runs the match reads it within a beat and aborts the match with that reason.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

UPGRADE: list[str] = ["ALTER TABLE ladder_matches ADD COLUMN abort_asked TEXT"]
DOWNGRADE: list[str] = ["ALTER TABLE ladder_matches DROP COLUMN abort_asked"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
