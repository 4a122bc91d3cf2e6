"""Scrimmages: unrated matches a bot's owner asks for (server.ladder.scrimmage).

``ladder_scrimmages``: one row per scrimmage: the bot that challenged (its name and
version), its opponents (JSON list), the player count, the matches planned, whether
deals are played in duplicate, the sequential test asked for (JSON, or NULL), when
it was asked for and ended, its status (``playing``, ``complete``, ``stopped``),
why it stopped, and its final table (JSON). The rows of a name in the last hour
are its rate limit.

``scrimmage_matches``: one row per match of a scrimmage, in the order played: its
seats as rated players (``NAME`` or ``NAME@VERSION``, JSON), status, and each seat's
rank and pizzas once it ended, and its deal set's server seed (duplicate deals:
its record stays sealed until its set ends; NULL otherwise). While it runs, the
match also has a row in ``ladder_matches`` (the lobby seats its bots from there);
when it ends that row is removed, so the ladder never rates it nor lists it among
its results.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


UPGRADE: list[str] = [
    """
    CREATE TABLE ladder_scrimmages (
        scrimmage_id  TEXT PRIMARY KEY,
        name          TEXT NOT NULL,
        version       TEXT NOT NULL,
        opponents     TEXT NOT NULL,
        players       INTEGER NOT NULL,
        planned       INTEGER NOT NULL,
        duplicate     INTEGER NOT NULL,
        sprt          TEXT,
        created       DOUBLE PRECISION NOT NULL,
        ended         DOUBLE PRECISION,
        status        TEXT NOT NULL,
        reason        TEXT,
        result        TEXT
    )
    """,
    "CREATE INDEX ladder_scrimmages_by_name ON ladder_scrimmages (name, created)",
    """
    CREATE TABLE scrimmage_matches (
        match_id      TEXT PRIMARY KEY,
        scrimmage_id  TEXT NOT NULL,
        idx           INTEGER NOT NULL,
        names         TEXT NOT NULL,
        status        TEXT NOT NULL,
        ranks         TEXT,
        delivered     TEXT,
        created       DOUBLE PRECISION NOT NULL,
        seed          TEXT
    )
    """,
    "CREATE INDEX scrimmage_matches_by_scrimmage ON scrimmage_matches (scrimmage_id, idx)",
]

DOWNGRADE: list[str] = [
    "DROP TABLE scrimmage_matches",
    "DROP TABLE ladder_scrimmages",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
