"""Connections to the server's one database: an SQLite file (WAL) or PostgreSQL.

The database is an SQLite file (a path: the embedded default) or a PostgreSQL
database (a ``postgresql://`` URL, see docs/storage.md). Both are reached through
:func:`connect`, which returns the driver's own connection for SQLite (no layer in
between, so SQLite keeps its speed) and a :class:`PostgresConnection` for PostgreSQL:
the same methods (``execute``, ``executemany``, ``in_transaction``, ``close``), the
same ``?`` placeholders, and errors raised as :class:`PostgresError` (so that callers
catch :data:`ERRORS` for either database). SQL that differs between the two is
chosen where it is written (in ``server.db`` only), by the connection's
:func:`dialect`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    import psycopg


class StorageError(RuntimeError):
    """The database could not store a write (the message says why)."""


def now_iso() -> str:
    """Returns the current UTC time as ISO 8601 text with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


SQLITE: Final = "sqlite"
POSTGRESQL: Final = "postgresql"

#: Advisory lock keys (per database): the claim of one server (``Storage.claim``),
#: the ladder's writes and its hosts' presence (``server.db.ladder``), and schema
#: upgrades (``server.db.schema``).
CLAIM_LOCK: Final = 0x6D6D0001
LADDER_LOCK: Final = 0x6D6D0002
LADDER_HOST_LOCK: Final = 0x6D6D0003
SCHEMA_LOCK: Final = 0x6D6D0003

#: The URL schemes of a PostgreSQL database (as libpq reads them).
URL_SCHEMES: Final = ("postgresql://", "postgres://")

#: How long a PostgreSQL connection attempt may take (seconds).
CONNECT_TIMEOUT_S: Final = 5


def storable(text: str) -> bool:
    """Returns whether ``text`` can be stored as text on either database (PostgreSQL's
    text holds no NUL character): an id or a name that cannot names nothing stored."""
    return "\x00" not in text


def is_url(target: str | Path) -> bool:
    """Returns whether ``target`` names a PostgreSQL database (else it is a file path)."""
    return isinstance(target, str) and target.startswith(URL_SCHEMES)


def shown(target: str | Path) -> str:
    """Returns ``target`` fit for logs and messages: a URL's password replaced by ***."""
    if not is_url(target):
        return str(target)
    from urllib.parse import urlsplit

    parts = urlsplit(str(target))
    if parts.password is None:
        return str(target)
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


class PostgresError(RuntimeError):
    """A PostgreSQL statement or connection failed (the driver's error is its cause)."""


class PostgresIntegrityError(PostgresError):
    """A PostgreSQL statement broke a constraint (a key taken, a value missing)."""


class PostgresDataError(PostgresError):
    """A PostgreSQL statement was given a value the column cannot hold (text with a
    NUL character, a number out of range)."""


#: What a failed statement raises, on either database.
ERRORS: Final[tuple[type[Exception], ...]] = (sqlite3.Error, PostgresError)
#: What a statement that breaks a constraint raises, on either database.
INTEGRITY_ERRORS: Final[tuple[type[Exception], ...]] = (
    sqlite3.IntegrityError,
    PostgresIntegrityError,
)


class Cursor(Protocol):
    """The part of a DB-API cursor the server uses (rows are tuples)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """What :func:`connect` returns: an ``sqlite3.Connection`` or a
    :class:`PostgresConnection`, in autocommit mode (transactions are opened with an
    explicit BEGIN), with ``?`` placeholders."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...

    def close(self) -> None: ...


def dialect(db: Connection) -> str:
    """Returns the database a connection reaches: :data:`SQLITE` or :data:`POSTGRESQL`."""
    return POSTGRESQL if isinstance(db, PostgresConnection) else SQLITE


def connect(target: str | Path, durable: bool = True) -> Connection:
    """Returns a connection to the database ``target`` (an SQLite file path, or a
    ``postgresql://`` URL) in autocommit mode; raises what :data:`ERRORS` names.

    A ``durable`` connection waits for every commit to reach the disk (it survives a
    power cut); otherwise commits survive a crash of this process, but may be lost
    with the power (SQLite's ``synchronous=NORMAL``; PostgreSQL's
    ``synchronous_commit=off``, whose loss window is a fraction of a second).
    """
    if is_url(target):
        return PostgresConnection(str(target), durable=durable)
    db = sqlite3.connect(str(target), isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
    db.execute("PRAGMA busy_timeout=5000")
    db.execute("PRAGMA foreign_keys=ON")
    return db


def connect_read_only(target: str | Path) -> Connection:
    """Returns a connection that only reads the database ``target``, usable from one
    thread at a time (any thread); raises what :data:`ERRORS` names. An SQLite file
    is opened read-only (``mode=ro``: nothing can be written through it, not even
    the schema); a PostgreSQL connection is the ordinary one (readers use
    read-only transactions, see ``LadderReads.snapshot``)."""
    if is_url(target):
        return PostgresConnection(str(target), durable=False)
    db = sqlite3.connect(
        f"file:{Path(target).resolve()}?mode=ro",
        uri=True,
        timeout=30.0,
        isolation_level=None,
        check_same_thread=False,
    )
    db.execute("PRAGMA busy_timeout=30000")
    return db


@functools.lru_cache(maxsize=512)
def _placeholders(sql: str) -> str:
    """Returns ``sql`` with psycopg's ``%s`` for each ``?`` (the project's SQL holds no
    other ``?`` nor ``%``)."""
    return sql.replace("?", "%s")


class PostgresConnection:
    """A PostgreSQL connection with the methods the server uses of an SQLite one.

    In autocommit mode, like the SQLite connections (a transaction is an explicit
    BEGIN ... COMMIT). A connection the server lost (PostgreSQL restarted, the network
    failed) fails its statement, and the next statement connects again: a writer
    fails while the database is away and succeeds again once it is back. A statement
    is never repeated, since it may have committed.
    """

    def __init__(self, url: str, durable: bool = True) -> None:
        self.url = url
        self.durable = durable
        self._db: psycopg.Connection[tuple[Any, ...]] | None = None
        self._begun = False  # a BEGIN was sent, and no COMMIT or ROLLBACK since
        self._live()

    def _live(self) -> psycopg.Connection[tuple[Any, ...]]:
        """Returns the open connection, connecting (again) when there is none."""
        import psycopg

        if self._db is not None and not self._db.closed and not self._db.broken:
            return self._db
        if self._db is not None:
            with contextlib.suppress(psycopg.Error):
                self._db.close()
            self._db = None
        try:
            db = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as e:
            raise PostgresError(f"cannot connect to PostgreSQL: {_first_line(e)}") from e
        if not self.durable:
            try:
                db.execute("SET synchronous_commit = off")
            except psycopg.Error as e:
                db.close()  # a connection that failed its set-up is not kept, nor left open
                raise PostgresError(f"cannot set up a PostgreSQL session: {_first_line(e)}") from e
        self._db = db
        return db

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open on this connection."""
        from psycopg.pq import TransactionStatus

        return (
            self._db is not None
            and not self._db.closed
            and self._db.info.transaction_status != TransactionStatus.IDLE
        )

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        """Returns the cursor of ``sql`` run with ``parameters`` (rows fetched)."""
        import psycopg

        word = sql.lstrip()[:8].upper()
        with _translated():
            try:
                cursor: Cursor = self._live().execute(_placeholders(sql), parameters)
            except psycopg.OperationalError:
                # A read outside a transaction on a connection found lost is asked
                # again on a new one: it changes nothing, and a reader that waits for
                # no writes would otherwise fail once per restart of the database.
                # Inside a transaction it is not: on a new connection it would run
                # outside that transaction (without its locks), so the error stands.
                if not (
                    self._db is not None
                    and self._db.broken
                    and not self._begun
                    and word.startswith("SELECT")
                ):
                    raise
                cursor = self._live().execute(_placeholders(sql), parameters)
            finally:
                if word.startswith(("COMMIT", "ROLLBACK")):
                    self._begun = False  # over, committed or not
            if word.startswith("BEGIN"):
                self._begun = True
            return cursor

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor:
        """Returns the cursor of ``sql`` run once per parameter sequence."""
        with _translated():
            many = self._live().cursor()
            many.executemany(_placeholders(sql), list(parameters))
            cursor: Cursor = many
            return cursor

    def close(self) -> None:
        """Closes the connection (a later statement would open a new one)."""
        if self._db is not None:
            self._db.close()
            self._db = None


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """Raises psycopg's errors as :class:`PostgresError` (the one boundary where they
    are mapped)."""
    import psycopg

    try:
        yield
    except psycopg.IntegrityError as e:
        raise PostgresIntegrityError(_first_line(e)) from e
    except psycopg.DataError as e:
        raise PostgresDataError(_first_line(e)) from e
    except psycopg.Error as e:
        raise PostgresError(_first_line(e)) from e


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


@contextlib.contextmanager
def transaction(db: Connection, lock: int | None = None) -> Iterator[Connection]:
    """Yields ``db`` inside one write transaction, committed at the end (rolled back
    on an exception). On SQLite it is ``BEGIN IMMEDIATE`` (the one writer of the file);
    on PostgreSQL, a ``BEGIN`` that first takes the advisory lock ``lock`` when given,
    so that the writers holding that lock run one at a time, as on SQLite."""
    if dialect(db) == SQLITE:
        db.execute("BEGIN IMMEDIATE")
    else:
        db.execute("BEGIN")
    try:
        if lock is not None and dialect(db) == POSTGRESQL:
            db.execute("SELECT pg_advisory_xact_lock(?)", (lock,))
        yield db
    except BaseException:
        with contextlib.suppress(*ERRORS):  # a lost connection has nothing to undo
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def among(db: Connection, values: Sequence[str]) -> tuple[str, object]:
    """Returns the SQL test "is one of ``values``" and its one parameter."""
    if dialect(db) == POSTGRESQL:
        return "= ANY(?)", list(values)
    return "IN (SELECT value FROM json_each(?))", json.dumps(list(values))
