"""Many match hosts on one database: which host runs each match, and the ladder's
entries as rows that every host sees.

``matches.host``, ``match_setups.host`` and ``ladder_matches.host`` name the host
(its ``--host-id``) that runs a match, so that a restarted host resumes (or aborts)
only its own matches and leaves the other hosts' alone; a row from before this
revision has none, and the first host to start takes it (``Storage.adopt``).
``ladder_matches.address`` is the address the running host advertises (its
``--advertise``), sent to the bots of that match entered through other hosts.
``ladder_results.token`` holds a seat's token while its match runs, for the host
that holds the bot's Enter stream to hand it over (it is cleared when the match ends).

``ladder_entries``: one row per bot that has an Enter stream open somewhere: the host
that holds it, the stream's own id (a newer entry of the same bot replaces the row,
and the older stream learns it is replaced), when it entered and its last heartbeat
(a host that dies stops beating; its rows are passed over, then removed).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

UPGRADE: list[str] = [
    "ALTER TABLE matches ADD COLUMN host TEXT",
    "ALTER TABLE match_setups ADD COLUMN host TEXT",
    "ALTER TABLE ladder_matches ADD COLUMN host TEXT",
    "ALTER TABLE ladder_matches ADD COLUMN address TEXT",
    "ALTER TABLE ladder_results ADD COLUMN token TEXT",
    "CREATE INDEX ladder_matches_running ON ladder_matches (host) WHERE status = 'running'",
    """
    CREATE TABLE ladder_entries (
        name      TEXT PRIMARY KEY,
        host      TEXT NOT NULL,
        stream    TEXT NOT NULL,
        entered   REAL NOT NULL,
        heartbeat REAL NOT NULL
    )
    """,
    "CREATE INDEX ladder_entries_by_host ON ladder_entries (host)",
]

POSTGRESQL: list[str] = [
    *UPGRADE[:6],
    """
    CREATE TABLE ladder_entries (
        name      TEXT PRIMARY KEY,
        host      TEXT NOT NULL,
        stream    TEXT NOT NULL,
        entered   DOUBLE PRECISION NOT NULL,
        heartbeat DOUBLE PRECISION NOT NULL
    )
    """,
    *UPGRADE[7:],
]

DOWNGRADE: list[str] = [
    "DROP INDEX ladder_entries_by_host",
    "DROP TABLE ladder_entries",
    "DROP INDEX ladder_matches_running",
    "ALTER TABLE ladder_results DROP COLUMN token",
    "ALTER TABLE ladder_matches DROP COLUMN address",
    "ALTER TABLE ladder_matches DROP COLUMN host",
    "ALTER TABLE match_setups DROP COLUMN host",
    "ALTER TABLE matches DROP COLUMN host",
]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRESQL if postgresql else UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
