"""Versions of a ladder bot: each rated on its own, with its own record.

A bot enters the ladder as a version of its name (``Ladder.Enter``'s ``version``;
docs/ladder.md, "Versions"). ``ladder_bots.version`` is the version of the name's
newest entry; a match's seats copy it as the match starts
(``ladder_results.version``), so every result names the version that played it.
``ladder_ratings``, ``ladder_tallies`` and ``ladder_positions`` are kept per name
and version (their keys gain ``version``), and ``ladder_tallies`` gains when each
version played its first and its last rated match in the scope (``first_played``,
``last_played``: the match's end, UNIX time), so that a bot's versions are listed
side by side from a row each.

Everything stored before this revision belongs to the default version, the empty
text (shown as ``-``): the version of an Enter that names none.

SQLite cannot change a table's primary key: the three tables are made anew and
filled from the old ones. On PostgreSQL (:data:`POSTGRESQL`) the keys are replaced in
place. Going back (:data:`DOWNGRADE`) keeps the default version's rows only: run
``mammamia ladder rerate`` with the older server to rate every result by name again.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

#: When a bot's rated matches of one scope (0: all) were first and last played.
_PLAYED = """
    UPDATE ladder_tallies SET
    first_played = (SELECT MIN(COALESCE(m.ended, m.created)) FROM ladder_results r
        JOIN ladder_matches m ON m.match_id = r.match_id
        WHERE m.rated = 1 AND r.name = ladder_tallies.name
        AND (ladder_tallies.players = 0 OR m.players = ladder_tallies.players)),
    last_played = (SELECT MAX(COALESCE(m.ended, m.created)) FROM ladder_results r
        JOIN ladder_matches m ON m.match_id = r.match_id
        WHERE m.rated = 1 AND r.name = ladder_tallies.name
        AND (ladder_tallies.players = 0 OR m.players = ladder_tallies.players))
    """

_COMMON = [
    "ALTER TABLE ladder_bots ADD COLUMN version TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE ladder_results ADD COLUMN version TEXT NOT NULL DEFAULT ''",
    "CREATE INDEX ladder_results_versions ON ladder_results"
    " (name, version, created DESC, match_id)",
]

UPGRADE: list[str] = [
    *_COMMON,
    """
    CREATE TABLE ladder_ratings_versions (
        players INTEGER NOT NULL,
        name    TEXT NOT NULL,
        version TEXT NOT NULL DEFAULT '',
        mu      REAL NOT NULL,
        sigma   REAL NOT NULL,
        PRIMARY KEY (players, name, version)
    )
    """,
    "INSERT INTO ladder_ratings_versions (players, name, mu, sigma)"
    " SELECT players, name, mu, sigma FROM ladder_ratings",
    "DROP TABLE ladder_ratings",
    "ALTER TABLE ladder_ratings_versions RENAME TO ladder_ratings",
    """
    CREATE TABLE ladder_tallies_versions (
        players      INTEGER NOT NULL,        -- 0: all matches; 2..5: that many players
        name         TEXT NOT NULL,
        version      TEXT NOT NULL DEFAULT '',
        games        INTEGER NOT NULL,        -- rated matches played
        wins         INTEGER NOT NULL,        -- of them, ranked first (alone or tied)
        delivered    INTEGER NOT NULL,        -- pizzas delivered in them, summed
        first_played REAL,                    -- the first one's end (UNIX time)
        last_played  REAL,                    -- the last one's end
        PRIMARY KEY (players, name, version)
    )
    """,
    "INSERT INTO ladder_tallies_versions (players, name, games, wins, delivered)"
    " SELECT players, name, games, wins, delivered FROM ladder_tallies",
    "DROP TABLE ladder_tallies",
    "ALTER TABLE ladder_tallies_versions RENAME TO ladder_tallies",
    _PLAYED,
    """
    CREATE TABLE ladder_positions_versions (
        players  INTEGER NOT NULL,
        name     TEXT NOT NULL,
        version  TEXT NOT NULL DEFAULT '',
        position INTEGER NOT NULL,
        games    INTEGER NOT NULL,
        wins     INTEGER NOT NULL,
        rank_sum INTEGER NOT NULL,
        PRIMARY KEY (players, name, version, position)
    )
    """,
    "INSERT INTO ladder_positions_versions (players, name, position, games, wins, rank_sum)"
    " SELECT players, name, position, games, wins, rank_sum FROM ladder_positions",
    "DROP TABLE ladder_positions",
    "ALTER TABLE ladder_positions_versions RENAME TO ladder_positions",
]

POSTGRESQL: list[str] = [
    *_COMMON,
    "ALTER TABLE ladder_ratings ADD COLUMN version TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE ladder_ratings DROP CONSTRAINT ladder_ratings_pkey",
    "ALTER TABLE ladder_ratings ADD PRIMARY KEY (players, name, version)",
    "ALTER TABLE ladder_tallies ADD COLUMN version TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE ladder_tallies ADD COLUMN first_played DOUBLE PRECISION",
    "ALTER TABLE ladder_tallies ADD COLUMN last_played DOUBLE PRECISION",
    "ALTER TABLE ladder_tallies DROP CONSTRAINT ladder_tallies_pkey",
    "ALTER TABLE ladder_tallies ADD PRIMARY KEY (players, name, version)",
    _PLAYED,
    "ALTER TABLE ladder_positions ADD COLUMN version TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE ladder_positions DROP CONSTRAINT ladder_positions_pkey",
    "ALTER TABLE ladder_positions ADD PRIMARY KEY (players, name, version, position)",
]

DOWNGRADE: list[str] = [
    """
    CREATE TABLE ladder_ratings_names (
        players INTEGER NOT NULL,
        name    TEXT NOT NULL,
        mu      REAL NOT NULL,
        sigma   REAL NOT NULL,
        PRIMARY KEY (players, name)
    )
    """,
    "INSERT INTO ladder_ratings_names (players, name, mu, sigma)"
    " SELECT players, name, mu, sigma FROM ladder_ratings WHERE version = ''",
    "DROP TABLE ladder_ratings",
    "ALTER TABLE ladder_ratings_names RENAME TO ladder_ratings",
    """
    CREATE TABLE ladder_tallies_names (
        players   INTEGER NOT NULL,
        name      TEXT NOT NULL,
        games     INTEGER NOT NULL,
        wins      INTEGER NOT NULL,
        delivered INTEGER NOT NULL,
        PRIMARY KEY (players, name)
    )
    """,
    "INSERT INTO ladder_tallies_names (players, name, games, wins, delivered)"
    " SELECT players, name, games, wins, delivered FROM ladder_tallies WHERE version = ''",
    "DROP TABLE ladder_tallies",
    "ALTER TABLE ladder_tallies_names RENAME TO ladder_tallies",
    """
    CREATE TABLE ladder_positions_names (
        players  INTEGER NOT NULL,
        name     TEXT NOT NULL,
        position INTEGER NOT NULL,
        games    INTEGER NOT NULL,
        wins     INTEGER NOT NULL,
        rank_sum INTEGER NOT NULL,
        PRIMARY KEY (players, name, position)
    )
    """,
    "INSERT INTO ladder_positions_names (players, name, position, games, wins, rank_sum)"
    " SELECT players, name, position, games, wins, rank_sum FROM ladder_positions"
    " WHERE version = ''",
    "DROP TABLE ladder_positions",
    "ALTER TABLE ladder_positions_names RENAME TO ladder_positions",
    "DROP INDEX ladder_results_versions",
    "ALTER TABLE ladder_results DROP COLUMN version",
    "ALTER TABLE ladder_bots DROP COLUMN version",
]

POSTGRESQL_DOWNGRADE: list[str] = [
    *(
        statement
        for table, key in (
            ("ladder_ratings", "players, name"),
            ("ladder_tallies", "players, name"),
            ("ladder_positions", "players, name, position"),
        )
        for statement in (
            f"DELETE FROM {table} WHERE version != ''",
            f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey",
            f"ALTER TABLE {table} ADD PRIMARY KEY ({key})",
            f"ALTER TABLE {table} DROP COLUMN version",
        )
    ),
    "ALTER TABLE ladder_tallies DROP COLUMN first_played",
    "ALTER TABLE ladder_tallies DROP COLUMN last_played",
    "DROP INDEX ladder_results_versions",
    "ALTER TABLE ladder_results DROP COLUMN version",
    "ALTER TABLE ladder_bots DROP COLUMN version",
]


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRESQL if postgresql else UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in POSTGRESQL_DOWNGRADE if postgresql else DOWNGRADE:
        op.execute(statement)
