"""The bots' notes: the private text a seat's answers carried (server.notes).

``match_notes``: one row per seat of an ended match whose answers carried notes: the
hash of the seat's token (so that the seat's token finds them again) and the notes as
JSON, ``[[action index, note], ...]`` in the order taken. They are kept apart from
``matches.record`` so that no public record can carry them; only an owner's read
joins them to the record (server.visibility.owned_record).

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


UPGRADE: list[str] = [
    """
    CREATE TABLE match_notes (
        match_id    TEXT NOT NULL,
        seat        INTEGER NOT NULL,
        token_hash  TEXT NOT NULL,
        notes       TEXT NOT NULL,
        PRIMARY KEY (match_id, seat)
    )
    """,
]

DOWNGRADE: list[str] = ["DROP TABLE match_notes"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
