"""The writer thread: database writes run one at a time, in the order given.

Writes never wait for the disk on the event loop: they run on one writer thread,
one at a time in the order they were given; each write is one transaction, so a
crash leaves none half-written.

A writer is *failing* while the database itself fails its writes (a lost
connection, a full disk, a lock that outlasts the busy timeout): only
:func:`database_failed` errors count. A write that refuses what it was asked (a
taken name, a wrong key, a constraint the caller's input breaks) is an outcome for
its caller, and leaves ``failing`` as it was.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

import structlog

from ..quoting import fitted
from .connection import ERRORS, INTEGRITY_ERRORS, PostgresDataError, StorageError

log = structlog.get_logger()

P = ParamSpec("P")
T = TypeVar("T")

#: Errors the database raises for what a write was asked, not for its own state:
#: a constraint broken, a value it cannot hold.
REFUSED_BY_DATABASE: tuple[type[Exception], ...] = (
    *INTEGRITY_ERRORS,
    sqlite3.DataError,
    PostgresDataError,
)


def database_failed(error: BaseException) -> bool:
    """Returns whether ``error`` is a failure of the database itself (its driver's
    error, a storage error, the file system's), as opposed to a refusal of the write
    or a caller's mistake."""
    if isinstance(error, REFUSED_BY_DATABASE):
        return False
    return isinstance(error, (*ERRORS, StorageError, OSError))


class Writer:
    """One thread that runs database writes one at a time, in the order given.

    The event loop hands writes over and never waits for the disk itself; with a
    single writer thread the writes of one module never compete for SQLite's
    write lock, and a later write cannot overtake an earlier one.
    """

    def __init__(self, name: str = "db-writer") -> None:
        self.name = name
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.failing = False
        #: Called on the writer thread with each write's seconds (``server.metrics``).
        self.timed: Callable[[float], None] | None = None
        self._watchers: list[Callable[[bool], None]] = []

    def watch(self, changed: Callable[[bool], None]) -> None:
        """Calls ``changed(failing)`` on the writer thread each time the database
        starts to fail writes (True) or a write succeeds again (False); a refused
        write changes nothing."""
        self._watchers.append(changed)

    def _watched(self, write: Callable[[], T]) -> T:
        start = time.perf_counter()
        try:
            result = write()
        except Exception as e:
            if database_failed(e):
                self._set_failing(True)
            raise
        finally:
            if self.timed is not None:
                self.timed(time.perf_counter() - start)
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
    if error is None:
        return
    if database_failed(error):
        log.error("database_write_failed", error=fitted(repr(error)))
    else:
        log.warning("database_write_refused", error=fitted(repr(error)))
