"""The schema before migrations: the server's matches and the ladder's tables.

Every statement is ``IF NOT EXISTS``, so this revision also applies to a database
that an earlier server created without alembic (it has these tables, and no
``alembic_version``): there it changes nothing but the recorded revision.

On PostgreSQL (:data:`POSTGRESQL`) the tables are the same but for two types: times
and ratings are ``DOUBLE PRECISION`` (PostgreSQL's ``REAL`` has 24 bits, too few for a
UNIX time), and ``matches`` has an identity column ``seq`` where SQLite has its
``rowid`` (the order of insertion, which breaks ties of creation time).

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

UPGRADE: list[str] = [
    # The server's matches and their records (server/db/matches.py).
    """
    CREATE TABLE IF NOT EXISTS matches (
        id        TEXT PRIMARY KEY,
        status    TEXT NOT NULL CHECK (status IN ('waiting', 'running', 'finished', 'aborted')),
        players   INTEGER NOT NULL,
        names     TEXT NOT NULL,              -- JSON list, seat order
        ladder    INTEGER NOT NULL DEFAULT 0,
        created   TEXT NOT NULL,              -- ISO 8601, UTC
        ended     TEXT,
        winners   TEXT,                       -- JSON list of seats, once finished
        ranks     TEXT,                       -- JSON list per seat, once finished
        delivered TEXT,                       -- JSON list per seat, once finished
        reason    TEXT,                       -- why an aborted match was cut off
        record    TEXT                        -- the game record (RECORD.md) once ended
    )
    """,
    "CREATE INDEX IF NOT EXISTS matches_created ON matches (created)",
    # The ladder (server/db/ladder/).
    """
    CREATE TABLE IF NOT EXISTS ladder_bots (
        name     TEXT PRIMARY KEY,
        key_hash TEXT NOT NULL,
        created  REAL NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS ladder_matches (
        match_id     TEXT PRIMARY KEY,
        players      INTEGER NOT NULL,
        status       TEXT NOT NULL CHECK (status IN ('running', 'finished', 'aborted')),
        created      REAL NOT NULL,
        ended        REAL,
        finish_order INTEGER UNIQUE,
        rated        INTEGER NOT NULL DEFAULT 0
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS ladder_results (
        match_id  TEXT NOT NULL REFERENCES ladder_matches (match_id),
        seat      INTEGER NOT NULL,
        name      TEXT NOT NULL,
        rank      INTEGER,
        delivered INTEGER,
        PRIMARY KEY (match_id, seat)
    )
    """,
    "CREATE INDEX IF NOT EXISTS ladder_results_by_name ON ladder_results (name, match_id)",
    """
    CREATE TABLE IF NOT EXISTS ladder_ratings (
        players INTEGER NOT NULL,
        name    TEXT NOT NULL,
        mu      REAL NOT NULL,
        sigma   REAL NOT NULL,
        PRIMARY KEY (players, name)
    )
    """,
]


POSTGRESQL: list[str] = [
    """
    CREATE TABLE IF NOT EXISTS matches (
        id        TEXT PRIMARY KEY,
        status    TEXT NOT NULL CHECK (status IN ('waiting', 'running', 'finished', 'aborted')),
        players   INTEGER NOT NULL,
        names     TEXT NOT NULL,
        ladder    INTEGER NOT NULL DEFAULT 0,
        created   TEXT NOT NULL,
        ended     TEXT,
        winners   TEXT,
        ranks     TEXT,
        delivered TEXT,
        reason    TEXT,
        record    TEXT,
        seq       BIGINT GENERATED ALWAYS AS IDENTITY
    )
    """,
    "CREATE INDEX IF NOT EXISTS matches_created ON matches (created)",
    """
    CREATE TABLE IF NOT EXISTS ladder_bots (
        name     TEXT PRIMARY KEY,
        key_hash TEXT NOT NULL,
        created  DOUBLE PRECISION NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS ladder_matches (
        match_id     TEXT PRIMARY KEY,
        players      INTEGER NOT NULL,
        status       TEXT NOT NULL CHECK (status IN ('running', 'finished', 'aborted')),
        created      DOUBLE PRECISION NOT NULL,
        ended        DOUBLE PRECISION,
        finish_order INTEGER UNIQUE,
        rated        INTEGER NOT NULL DEFAULT 0
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS ladder_results (
        match_id  TEXT NOT NULL REFERENCES ladder_matches (match_id),
        seat      INTEGER NOT NULL,
        name      TEXT NOT NULL,
        rank      INTEGER,
        delivered INTEGER,
        PRIMARY KEY (match_id, seat)
    )
    """,
    "CREATE INDEX IF NOT EXISTS ladder_results_by_name ON ladder_results (name, match_id)",
    """
    CREATE TABLE IF NOT EXISTS ladder_ratings (
        players INTEGER NOT NULL,
        name    TEXT NOT NULL,
        mu      DOUBLE PRECISION NOT NULL,
        sigma   DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (players, name)
    )
    """,
]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRESQL if postgresql else UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("revision 0001 is the first: there is nothing to go back to")
