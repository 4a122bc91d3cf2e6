"""Operating a ladder: the audit trail, the server's switches, suspended bots,
per-bot quotas and voided matches (server.db.admin, server.admin).

``audit``: every change an operator (or the server itself, as ``server``) makes,
appended and never updated: when, who, what, on what, why, and the details as JSON.
``switches``: the server-wide switches an operator turns (``ladder_paused``,
``registration_closed``), each with who turned it, when, and why; a missing row is
the switch off. ``ladder_bots`` gains why and when a bot was suspended and by whom
(``suspended`` is NULL for a bot in good standing), and its quotas (NULL: the
server's default). ``ladder_matches`` gains when a finished match was voided, by
whom and why (NULL: it counts).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _statements(real: str, serial: str) -> list[str]:
    return [
        f"""
        CREATE TABLE audit (
            seq       {serial},
            at        {real} NOT NULL,
            operator  TEXT NOT NULL,
            action    TEXT NOT NULL,
            target    TEXT NOT NULL,
            reason    TEXT NOT NULL,
            detail    TEXT NOT NULL DEFAULT '{{}}'
        )
        """,
        f"""
        CREATE TABLE switches (
            name      TEXT PRIMARY KEY,
            value     TEXT NOT NULL,
            at        {real} NOT NULL,
            operator  TEXT NOT NULL,
            reason    TEXT NOT NULL
        )
        """,
        "ALTER TABLE ladder_bots ADD COLUMN suspended TEXT",
        f"ALTER TABLE ladder_bots ADD COLUMN suspended_at {real}",
        "ALTER TABLE ladder_bots ADD COLUMN suspended_by TEXT",
        "ALTER TABLE ladder_bots ADD COLUMN quota_per_hour INTEGER",
        "ALTER TABLE ladder_bots ADD COLUMN quota_entries INTEGER",
        f"ALTER TABLE ladder_matches ADD COLUMN voided {real}",
        "ALTER TABLE ladder_matches ADD COLUMN voided_by TEXT",
        "ALTER TABLE ladder_matches ADD COLUMN void_reason TEXT",
    ]


UPGRADE: list[str] = _statements("REAL", "INTEGER PRIMARY KEY AUTOINCREMENT")
POSTGRESQL: list[str] = _statements(
    "DOUBLE PRECISION", "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
)

DOWNGRADE: list[str] = [
    "ALTER TABLE ladder_matches DROP COLUMN void_reason",
    "ALTER TABLE ladder_matches DROP COLUMN voided_by",
    "ALTER TABLE ladder_matches DROP COLUMN voided",
    "ALTER TABLE ladder_bots DROP COLUMN quota_entries",
    "ALTER TABLE ladder_bots DROP COLUMN quota_per_hour",
    "ALTER TABLE ladder_bots DROP COLUMN suspended_by",
    "ALTER TABLE ladder_bots DROP COLUMN suspended_at",
    "ALTER TABLE ladder_bots DROP COLUMN suspended",
    "DROP TABLE switches",
    "DROP TABLE audit",
]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRESQL if postgresql else UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
