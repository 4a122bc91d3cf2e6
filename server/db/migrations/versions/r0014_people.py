"""The people's table: the results of the matches a person played for it.

``people_results``: one row per finished match a person played on the people's
table (``mammamia serve --people-table``; docs/web.md, "The people's table"): when
it ended (UNIX seconds), its seats as JSON, ``[[kind, name], ...]`` in seat order
(``kind`` is ``person``, ``builtin`` or ``ladder``), and their ranks as JSON. The
table's ratings are a replay of these rows in order (``server.web.people``), kept
apart from the bots' ladder: nothing of ``ladder_*`` is read or written for them.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


UPGRADE: list[str] = [
    """
    CREATE TABLE people_results (
        match_id  TEXT PRIMARY KEY,
        ended     REAL NOT NULL,
        seats     TEXT NOT NULL,
        ranks     TEXT NOT NULL
    )
    """,
    "CREATE INDEX people_results_order ON people_results (ended, match_id)",
]

DOWNGRADE: list[str] = ["DROP TABLE people_results"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
