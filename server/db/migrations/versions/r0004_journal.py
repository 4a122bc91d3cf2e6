"""The journal of running matches: what a restarted server needs to resume them.

``match_setups`` holds, per match, how it was created (players, colours, the first
player if chosen, the seeds, the time control, names) and the SHA-256 of each seat
token, as JSON; ``match_inputs`` every input the match took after that (a seat
joining, the start, an accepted answer, a default, an abort), numbered per match,
in order. A match's state is the replay of its inputs; both rows go when the match
has ended (its record is stored).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

UPGRADE: list[str] = [
    """
    CREATE TABLE match_setups (
        match_id TEXT PRIMARY KEY,
        setup    TEXT NOT NULL
    )
    """,
    """
    CREATE TABLE match_inputs (
        match_id TEXT NOT NULL,
        n        INTEGER NOT NULL,
        input    TEXT NOT NULL,
        PRIMARY KEY (match_id, n)
    )
    """,
]

DOWNGRADE: list[str] = [
    "DROP TABLE match_inputs",
    "DROP TABLE match_setups",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
