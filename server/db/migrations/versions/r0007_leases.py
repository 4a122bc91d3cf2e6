"""Leases of the hosts that share a PostgreSQL database, so that a host that is gone
for good loses no match: another host takes its unfinished matches over.

``hosts``: one row per host (its ``--host-id``), with the address it advertises and
the time its lease runs out (``expires``, seconds since the epoch on the host's
clock). A host renews its lease every beat; once the lease has lapsed, one live host
takes over the host's unfinished matches (``server.db.hosts``).

``ladder_matches.announced``: whether the seats of a running ladder match may be
handed to its bots. A scheduling pass records a match's seats, tokens included, in
the transaction that forms it, not yet announced; the host that runs it announces
them once the match exists, and again whenever it resumes it (after a restart or a
takeover), so a crash between the two leaves no match whose bots are never told
their seats. Rows from before this revision are announced.

``matches_unfinished``: the unfinished matches by host, which every beat reads for
the lapsed hosts.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def _hosts(real: str) -> str:
    return f"""
    CREATE TABLE hosts (
        host    TEXT PRIMARY KEY,
        address TEXT NOT NULL,
        expires {real} NOT NULL,
        renewed {real} NOT NULL
    )
    """


UPGRADE: list[str] = [
    "ALTER TABLE ladder_matches ADD COLUMN announced INTEGER NOT NULL DEFAULT 1",
    # Each beat looks for the unfinished matches of lapsed hosts: a few rows among many.
    "CREATE INDEX matches_unfinished ON matches (host) WHERE status IN ('waiting', 'running')",
]

DOWNGRADE: list[str] = [
    "DROP INDEX matches_unfinished",
    "ALTER TABLE ladder_matches DROP COLUMN announced",
    "DROP TABLE hosts",
]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    op.execute(_hosts("DOUBLE PRECISION" if postgresql else "REAL"))
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
