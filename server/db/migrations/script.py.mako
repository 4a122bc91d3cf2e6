"""${message}

Plain SQL through ``op.execute``, one statement a call (see docs/ladder.md). After
adding a revision, set ``server.db.schema.HEAD`` to its id.

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}
"""

from __future__ import annotations

from alembic import op

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = None
depends_on = None

UPGRADE: list[str] = [
]

DOWNGRADE: list[str] = [
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
