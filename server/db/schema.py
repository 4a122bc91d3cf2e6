"""The database's schema: brought up to date whenever a database is opened.

The schema is alembic's migrations in ``server/db/migrations`` (plain SQL, one file
per revision); :func:`upgrade` applies the ones a database lacks. :class:`server.db.
matches.Storage` and :class:`server.db.ladder.LadderStore` call it before they use a file,
so every file the server opens is at :data:`HEAD`; nobody runs a migration by hand.

Opening a file that is already up to date stays cheap (tests open hundreds): its
revision is read with :mod:`sqlite3` alone (or psycopg, for a ``postgresql://`` URL),
and alembic and SQLAlchemy are imported only when something is to be applied (a new
database, or one an older server wrote).

The same revisions serve SQLite and PostgreSQL: a revision whose SQL differs between
them holds a list of statements for each (see ``server/db/migrations/versions``). On
PostgreSQL an upgrade first takes the advisory lock :data:`SCHEMA_LOCK` in
its transaction, so servers that open one old database at once upgrade it once.
A file an earlier server made before migrations existed has the tables of revision
0001 and no ``alembic_version`` table; revision 0001 is written ``IF NOT EXISTS``,
so it applies there too and the later revisions follow.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import structlog

from .connection import CONNECT_TIMEOUT_S, SCHEMA_LOCK, is_url, shown

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

#: The newest revision in ``server/db/migrations/versions`` (a test checks they agree).
HEAD: Final = "0016"

MIGRATIONS: Final = Path(__file__).resolve().with_name("migrations")

#: How long an upgrade waits for another connection's write to end (seconds).
BUSY_TIMEOUT_S: Final = 30.0

# Alembic's ``context`` and ``op`` are module-wide proxies: one migration run at a time
# in a process (other processes wait for SQLite's write lock instead).
_RUNNING = threading.Lock()

log = structlog.get_logger()


class SchemaError(RuntimeError):
    """The database cannot be brought to this server's schema (the message says why)."""


def revision(path: str | Path) -> str | None:
    """Returns the database's schema revision: None for one without it (new, or made
    before migrations). Raises SchemaError for a damaged file, one that is not a
    database, or a PostgreSQL database that cannot be reached."""
    if is_url(path):
        return _postgres_revision(str(path))
    try:
        with contextlib.closing(sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S)) as db:
            try:
                row = db.execute("SELECT version_num FROM alembic_version").fetchone()
            except sqlite3.OperationalError as e:
                if "no such table" not in str(e):
                    raise
                return None
    except sqlite3.OperationalError as e:
        raise SchemaError(f"{path}: cannot read the database's schema revision: {e}") from e
    except sqlite3.DatabaseError as e:
        raise SchemaError(f"{path}: the database is damaged: {e}") from e
    return None if row is None else str(row[0])


def _postgres_revision(url: str) -> str | None:
    import psycopg
    from psycopg import errors

    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as db:
            try:
                row = db.execute("SELECT version_num FROM alembic_version").fetchone()
            except errors.UndefinedTable:
                return None
    except psycopg.Error as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise SchemaError(
            f"{shown(url)}: cannot read the database's schema revision: {first}"
        ) from e
    return None if row is None else str(row[0])


def upgrade(path: str | Path, target: str = "head") -> bool:
    """Brings the database file at ``path`` to ``target`` (the newest revision by
    default); returns whether anything was applied. Raises SchemaError when it cannot:
    a damaged file, or one a newer server wrote (a revision this one does not know)."""
    before = revision(path)
    if target == "head" and before == HEAD:
        return False
    _alembic("upgrade", path, target)
    after = revision(path)
    if after != before:
        log.info("database_schema_upgraded", db=shown(path), revision_before=before, revision=after)
    return True


def downgrade(path: str | Path, target: str) -> None:
    """Takes the database file back to revision ``target`` (for an operator going back
    to an older server; see docs/ladder.md)."""
    _alembic("downgrade", path, target)


def _alembic(command: str, path: str | Path, target: str) -> None:
    from alembic import command as commands
    from alembic.config import Config
    from alembic.util import CommandError
    from sqlalchemy.exc import DBAPIError

    named = shown(path)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    engine = _engine(path)
    try:
        with _RUNNING, engine.connect() as connection:
            config.attributes["connection"] = connection
            getattr(commands, command)(config, target)
    except CommandError as e:
        raise SchemaError(
            f"{named}: the database's schema revision is not one this server "
            f"knows (written by a newer server?): {e}"
        ) from e
    except DBAPIError as e:
        if isinstance(e.orig, sqlite3.DatabaseError) and not isinstance(
            e.orig, sqlite3.OperationalError
        ):
            raise SchemaError(f"{named}: the database is damaged: {e.orig}") from e
        first = (str(e.orig).strip().splitlines() or [type(e.orig).__name__])[0]
        raise SchemaError(
            f"{named}: the schema could not be brought to revision {target}: {first}"
        ) from e
    finally:
        engine.dispose()


def _engine(path: str | Path) -> Engine:
    """Returns an engine on the database: for a file, one whose transactions are
    SQLite's own ``BEGIN IMMEDIATE`` (pysqlite would commit before each schema change,
    and begin late); for a URL, psycopg's, each first taking the schema lock."""
    from sqlalchemy import create_engine, event
    from sqlalchemy.pool import NullPool

    if is_url(path):
        return _postgres_engine(str(path))

    def connect() -> sqlite3.Connection:
        # Autocommit at the driver: the transaction is the BEGIN below alone.
        return sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)

    # The URL names the dialect only (a path may hold what a URL cannot); the file
    # is the one ``connect`` opens.
    engine = create_engine("sqlite://", creator=connect, poolclass=NullPool)

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _postgres_engine(url: str) -> Engine:
    """Returns an engine on the PostgreSQL database whose transactions begin by taking
    the advisory lock ``SCHEMA_LOCK`` (released at their commit or rollback)."""
    import psycopg
    from sqlalchemy import create_engine, event
    from sqlalchemy.pool import NullPool

    def connect() -> psycopg.Connection[Any]:
        # The URL as libpq reads it (its query options, a socket directory as host).
        return psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S)

    engine = create_engine("postgresql+psycopg://", creator=connect, poolclass=NullPool)

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK})")

    return engine


def not_a_ladder(path: str) -> str | None:
    """Returns why ``path`` is not a server database with a ladder, or None when it is.

    Read-only, so that a wrong database is left as it was (opening the store would add
    the ladder's tables to any database; ``mammamia ladder rerate`` asks first).
    ``path`` is an SQLite file or a ``postgresql://`` URL.
    """
    from .connection import ERRORS, connect

    if is_url(path):
        try:
            db = connect(path)
            try:
                (table,) = db.execute("SELECT to_regclass('ladder_ratings')").fetchone()
            finally:
                db.close()
        except ERRORS as e:
            return f"cannot read the database ({e})"
        if table is None:
            return "not the database of a Mamma Mia! server with a ladder (no ladder tables)"
        return None
    if not Path(path).is_file():
        return "no such file"
    try:
        with contextlib.closing(
            sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
        ) as db:
            tables = {
                name
                for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
    except sqlite3.Error as e:
        return f"not a readable SQLite database ({e})"
    if "ladder_ratings" not in tables:
        return "not the database of a Mamma Mia! server with a ladder (no ladder tables)"
    return None
