"""The embedded database: one SQLite file (WAL) holding every match and its record.

A match row is written when the match is created (``waiting``), updated when it
starts (``running``) and once more when it ends (``finished`` or ``aborted``),
with its game record. The end is written durably, in one statement, before the
result is announced to anyone, and only over a match that has not ended yet, so
writing it twice changes nothing. A server that starts finds the matches a crash
cut off (still ``waiting`` or ``running``) and marks them ``aborted``.

Writes never wait for the disk on the event loop: they run on one writer thread
(:class:`Writer`), one at a time in the order they were given. Creating,
starting and naming a match are queued without waiting; ending it is awaited.
Each write is one transaction, so a crash leaves none half-written, and
:meth:`Storage.close` runs every write still queued before it closes.

Other parts of the server (the ladder) keep their own tables in the same database,
through their own connections to ``Storage.path`` (:func:`connect`).

The database is an SQLite file (a path: the embedded default) or a PostgreSQL
database (a ``postgresql://`` URL, see docs/storage.md). Both are reached through
:func:`connect`, which returns the driver's own connection for SQLite (no layer in
between, so SQLite keeps its speed) and a :class:`PostgresConnection` for PostgreSQL:
the same methods (``execute``, ``executemany``, ``in_transaction``, ``close``), the
same ``?`` placeholders, and errors raised as :class:`PostgresError` (so that callers
catch :data:`ERRORS` for either database). SQL that differs between the two is
chosen where it is written, by the connection's :func:`dialect`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import json
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final, ParamSpec, Protocol, TypeVar

if TYPE_CHECKING:
    import psycopg

import structlog

from . import schema

log = structlog.get_logger()

WAITING = "waiting"
RUNNING = "running"
FINISHED = "finished"
ABORTED = "aborted"
ENDED = (FINISHED, ABORTED)


class StorageError(RuntimeError):
    """The database could not store a write (the message says why)."""


_END_MATCH = (
    "INSERT INTO matches (id, status, players, names, ladder, created, ended, "
    "winners, ranks, delivered, reason, record, host) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET status = excluded.status, names = excluded.names, "
    "ended = excluded.ended, winners = excluded.winners, ranks = excluded.ranks, "
    "delivered = excluded.delivered, reason = excluded.reason, "
    "record = excluded.record WHERE matches.status IN ('waiting', 'running')"
)


def now_iso() -> str:
    """Returns the current UTC time as ISO 8601 text with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


SQLITE: Final = "sqlite"
POSTGRESQL: Final = "postgresql"

#: Advisory lock keys (per database): the claim of one server (:meth:`Storage.claim`),
#: the ladder's writes and its hosts' presence (``server.ladder.store``), and schema
#: upgrades (``server.schema``).
CLAIM_LOCK: Final = 0x6D6D0001
LADDER_LOCK: Final = 0x6D6D0002
LADDER_HOST_LOCK: Final = 0x6D6D0003
SCHEMA_LOCK: Final = schema.SCHEMA_LOCK
CONNECT_TIMEOUT_S: Final = schema.CONNECT_TIMEOUT_S

is_url = schema.is_url
shown = schema.shown


class PostgresError(RuntimeError):
    """A PostgreSQL statement or connection failed (the driver's error is its cause)."""


class PostgresIntegrityError(PostgresError):
    """A PostgreSQL statement broke a constraint (a key taken, a value missing)."""


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
            if not self.durable:
                db.execute("SET synchronous_commit = off")
        except psycopg.Error as e:
            raise PostgresError(f"cannot connect to PostgreSQL: {_first_line(e)}") from e
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


@dataclass(frozen=True, slots=True)
class MatchRow:
    """One stored match, as listed."""

    id: str
    status: str
    players: int
    names: tuple[str, ...]
    ladder: bool
    created: str
    ended: str | None
    winners: tuple[int, ...]
    ranks: tuple[int, ...]
    delivered: tuple[int, ...]
    reason: str | None


#: The columns of a match as listed, in :class:`MatchRow`'s order.
_COLUMNS = "id, status, players, names, ladder, created, ended, winners, ranks, delivered, reason"


def _row(r: Sequence[Any]) -> MatchRow:
    (
        match_id,
        status,
        players,
        names,
        ladder,
        created,
        ended,
        winners,
        ranks,
        delivered,
        reason,
    ) = r
    return MatchRow(
        id=match_id,
        status=status,
        players=players,
        names=tuple(json.loads(names)),
        ladder=bool(ladder),
        created=created,
        ended=ended,
        winners=tuple(json.loads(winners or "[]")),
        ranks=tuple(json.loads(ranks or "[]")),
        delivered=tuple(json.loads(delivered or "[]")),
        reason=reason,
    )


P = ParamSpec("P")
T = TypeVar("T")


class Writer:
    """One thread that runs database writes one at a time, in the order given.

    The event loop hands writes over and never waits for the disk itself; with a
    single writer thread the writes of one module never compete for SQLite's
    write lock, and a later write cannot overtake an earlier one.
    """

    def __init__(self, name: str = "db-writer") -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.failing = False
        self._watchers: list[Callable[[bool], None]] = []

    def watch(self, changed: Callable[[bool], None]) -> None:
        """Calls ``changed(failing)`` on the writer thread each time writes start to
        fail (True) or succeed again (False)."""
        self._watchers.append(changed)

    def _watched(self, write: Callable[[], T]) -> T:
        try:
            result = write()
        except Exception:
            self._set_failing(True)
            raise
        self._set_failing(False)
        return result

    def _set_failing(self, failing: bool) -> None:
        if failing != self.failing:
            self.failing = failing
            for changed in self._watchers:
                changed(failing)

    async def run(self, write: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Returns what ``write(*args, **kwargs)`` returns (or raises what it raises),
        once it has run after every write given before it."""
        return await asyncio.wrap_future(
            self._pool.submit(self._watched, functools.partial(write, *args, **kwargs))
        )

    def send(self, write: Callable[P, object], *args: P.args, **kwargs: P.kwargs) -> None:
        """Queues ``write(*args, **kwargs)`` after every write given before it, without
        waiting for it; a failure is logged (and a later write may repair it)."""
        self._pool.submit(
            self._watched, functools.partial(write, *args, **kwargs)
        ).add_done_callback(_log_failure)

    async def flush(self) -> None:
        """Returns once every write given so far has run."""
        await self.run(_nothing)

    def close(self) -> None:
        """Runs every write still queued, then stops the thread (waits for both)."""
        self._pool.shutdown(wait=True)


def _nothing() -> None:
    return None


def _log_failure(done: Future[object]) -> None:
    error = done.exception()
    if error is not None:
        log.error("database_write_failed", error=repr(error))


class Storage:
    """The server's database: reads on the event loop, writes on its :class:`Writer`.

    ``path`` is an SQLite file, or a ``postgresql://`` URL (kept as given in ``path``).
    ``host_id`` names this server among the hosts that share a PostgreSQL database
    (``mammamia serve --host-id``): each match row carries it, and this server resumes
    or aborts only its own matches at start-up. An SQLite file has one host, so there
    every row is this server's. Raises StorageError when the database cannot be
    opened or brought to this server's schema.
    """

    def __init__(self, path: str | Path, host_id: str = "") -> None:
        self.path: str | Path = str(path) if is_url(path) else Path(path)
        self.dialect = POSTGRESQL if is_url(path) else SQLITE
        self.host_id = host_id
        #: Whether other hosts may share the database (PostgreSQL): rows are then
        #: this server's only when they carry its ``host_id``.
        self.shared = self.dialect == POSTGRESQL
        self.writer = Writer()
        try:
            # Reads: on the event loop, quick (SQLite's WAL and PostgreSQL's snapshots:
            # readers never wait for the writer).
            self.db = connect(self.path, durable=False)
            try:
                schema.upgrade(self.path)  # the tables: server/migrations, up to date
            except schema.SchemaError as e:
                self.db.close()
                raise StorageError(str(e)) from e
            # Writes, on the writer thread only. Creating and starting a match need not
            # wait for the disk (a match cut off before its end is aborted anyway); its
            # end is synced to disk before it is announced.
            self._quick = connect(self.path, durable=False)
            self._durable = connect(self.path, durable=True)
        except PostgresError as e:
            self.writer.close()
            raise StorageError(f"{self.name}: {e}") from e
        self._claim: BinaryIO | None = None
        self._claimed: Connection | None = None

    @property
    def name(self) -> str:
        """Returns the database as it may be shown: the file, or the URL without
        its password."""
        return shown(self.path)

    def close(self) -> None:
        """Runs every write still queued, then closes the connections (and gives up
        the claim on the database)."""
        self.writer.close()
        self.db.close()
        self._quick.close()
        self._durable.close()
        if self._claim is not None:
            self._claim.close()
            self._claim = None
        if self._claimed is not None:
            # Given up here, not by the connection's end: PostgreSQL releases a closed
            # session's locks a moment later, and a server started at once after this
            # one would find its host id still claimed.
            with contextlib.suppress(*ERRORS):
                self._claimed.execute("SELECT pg_advisory_unlock_all()")
            self._claimed.close()
            self._claimed = None

    def check(self) -> None:
        """Raises StorageError when the file fails SQLite's quick integrity check, or
        when the PostgreSQL database cannot be read (PostgreSQL checks its own pages:
        there is no quick check to run from a client)."""
        if self.dialect == POSTGRESQL:
            try:
                self.db.execute("SELECT 1 FROM matches LIMIT 1").fetchall()
            except PostgresError as e:
                raise StorageError(f"{self.name}: the database cannot be read: {e}") from e
            return
        try:
            rows = [r[0] for r in self.db.execute("PRAGMA quick_check")]
        except sqlite3.Error as e:
            raise StorageError(f"{self.path}: the database is damaged: {e}") from e
        if rows != ["ok"]:
            raise StorageError(f"{self.path}: the database is damaged: {rows[0]}")

    def claim(self) -> None:
        """Takes the database (an SQLite file), or this server's ``host_id`` in it (a
        PostgreSQL database that many hosts share), for this process alone; raises
        StorageError when another server holds it. Two servers on one file, or with one
        host id, would resume and abort each other's matches. The claim is an advisory
        lock that ends with the process: on a file, ``flock``; on PostgreSQL, a session
        advisory lock on (:data:`CLAIM_LOCK`, the host id's hash) held by a connection
        of its own."""
        if self.dialect == POSTGRESQL:
            self._claim_postgres()
            return
        claim = open(self.path, "rb")  # noqa: SIM115 (held until close)
        try:
            fcntl.flock(claim.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            claim.close()
            raise StorageError(
                f"{self.path}: another server uses this database; stop it, "
                f"or give this one another --db"
            ) from None
        self._claim = claim

    def _claim_postgres(self) -> None:
        try:
            db = connect(self.path)
            (taken,) = db.execute(
                "SELECT pg_try_advisory_lock(CAST(? AS INTEGER), hashtext(?))",
                (CLAIM_LOCK, self.host_id),
            ).fetchone()
        except PostgresError as e:
            raise StorageError(f"{self.name}: {e}") from e
        if not taken:
            db.close()
            raise StorageError(
                f"{self.name}: another server uses this database as host "
                f"{self.host_id!r}; stop it, or give this one another "
                f"--host-id (or --advertise)"
            )
        self._claimed = db

    def adopt(self) -> int:
        """Returns how many unfinished matches without a host (written before hosts
        were named) this server took as its own. On PostgreSQL only (an SQLite file's
        rows are all its one server's); call it once the claim is held, before
        :meth:`abort_unfinished`."""
        if not self.shared:
            return 0
        with transaction(self.db, CLAIM_LOCK) as db:
            cur = db.execute(
                "UPDATE matches SET host = ? WHERE host IS NULL AND status IN "
                "('waiting', 'running')",
                (self.host_id,),
            )
            db.execute("UPDATE match_setups SET host = ? WHERE host IS NULL", (self.host_id,))
            return int(cur.rowcount)

    def _own(self) -> tuple[str, tuple[str, ...]]:
        """Returns the SQL condition (and its parameters) of this server's match rows."""
        return (" AND host = ?", (self.host_id,)) if self.shared else ("", ())

    def connect(self) -> Connection:
        """Returns a new connection to the same database (for another thread or module)."""
        return connect(self.path)

    def abort_unfinished(self, reason: str, keep: Collection[str] = ()) -> list[str]:
        """Returns the ids of matches left waiting or running, after marking them aborted,
        except those in ``keep`` (the matches the server resumes).

        For start-up, before any match is created: it writes on the calling thread.
        """
        own, mine = self._own()
        with transaction(self.db):
            ids = [
                r[0]
                for r in self.db.execute(
                    "SELECT id FROM matches WHERE status IN ('waiting', 'running')" + own, mine
                ).fetchall()
                if r[0] not in keep
            ]
            self.db.executemany(
                "UPDATE matches SET status = 'aborted', ended = ?, reason = ? WHERE id = ?",
                [(now_iso(), reason, match_id) for match_id in ids],
            )
        return ids

    def add_match(
        self, match_id: str, players: int, names: Sequence[str], ladder: bool, created: str
    ) -> None:
        """Queues storing a new match as waiting (a second time changes nothing)."""
        self.writer.send(
            self._quick.execute,
            "INSERT INTO matches (id, status, players, names, ladder, "
            "created, host) VALUES (?, 'waiting', ?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (match_id, players, json.dumps(list(names)), int(ladder), created, self.host_id),
        )

    def set_running(self, match_id: str) -> None:
        """Queues marking a waiting match as running."""
        self.writer.send(
            self._quick.execute,
            "UPDATE matches SET status = 'running' WHERE id = ? AND status = 'waiting'",
            (match_id,),
        )

    def set_names(self, match_id: str, names: Sequence[str]) -> None:
        """Queues storing the seat names of a match that has not ended."""
        self.writer.send(
            self._quick.execute,
            "UPDATE matches SET names = ? WHERE id = ? AND status IN ('waiting', 'running')",
            (json.dumps(list(names)), match_id),
        )

    async def end_match(
        self,
        match_id: str,
        status: str,
        record: str,
        *,
        players: int,
        names: Sequence[str],
        ladder: bool,
        created: str,
        winners: Sequence[int] = (),
        ranks: Sequence[int] = (),
        delivered: Sequence[int] = (),
        reason: str | None = None,
    ) -> bool:
        """Returns whether this call ended the match, once its status and record are
        on disk; raises StorageError when they could not be stored.

        A match that has already ended is left as it is, so a second call is harmless.
        The whole row is written, so the end is stored even if an earlier queued write
        of the match failed.
        """
        if status not in ENDED:
            raise ValueError(f"an ended match is 'finished' or 'aborted', got {status!r}")
        try:
            cur = await self.writer.run(
                self._durable.execute,
                _END_MATCH,
                (
                    match_id,
                    status,
                    players,
                    json.dumps(list(names)),
                    int(ladder),
                    created,
                    now_iso(),
                    json.dumps(list(winners)),
                    json.dumps(list(ranks)),
                    json.dumps(list(delivered)),
                    reason,
                    record,
                    self.host_id,
                ),
            )
        except ERRORS as e:
            raise StorageError(f"match {match_id}: its end was not stored: {e}") from e
        return bool(cur.rowcount == 1)

    def match(self, match_id: str) -> MatchRow | None:
        """Returns a stored match, or None when unknown."""
        r = self.db.execute(f"SELECT {_COLUMNS} FROM matches WHERE id = ?", (match_id,)).fetchone()
        return None if r is None else _row(r)

    def record(self, match_id: str) -> str | None:
        """Returns the stored game record of an ended match as JSON text, or None."""
        r = self.db.execute("SELECT record FROM matches WHERE id = ?", (match_id,)).fetchone()
        return None if r is None or r[0] is None else str(r[0])

    def matches(self, limit: int = 50) -> list[MatchRow]:
        """Returns up to ``limit`` matches, newest first."""
        # Ties of creation time: the one inserted last first (SQLite's rowid; on
        # PostgreSQL the identity column ``seq``, revision 0001).
        order = "rowid" if self.dialect == SQLITE else "seq"
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM matches ORDER BY created DESC, {order} DESC LIMIT ?", (limit,)
        )
        return [_row(r) for r in rows]

    def counts(self) -> dict[str, Any]:
        """Returns how many matches there are per status."""
        return {
            r[0]: r[1]
            for r in self.db.execute("SELECT status, COUNT(*) FROM matches GROUP BY status")
        }
