"""A reader: reads on a thread of their own, with a connection of their own.

For the reads that return a lot (standings, match lists, the web page's views): the
event loop awaits them and never waits for the database or the rows itself. One
thread, so the connection is never used by two at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from .connection import Connection

P = ParamSpec("P")
T = TypeVar("T")


class Reader:
    """A thread that runs reads one at a time over the connection ``opened()``
    returns, opened at the first use of :meth:`db`."""

    def __init__(self, opened: Callable[[], Connection], name: str) -> None:
        self._opened = opened
        self._db: Connection | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    async def run(self, read: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Returns ``read(*args, **kwargs)`` run on the reader's thread."""
        return await asyncio.wrap_future(self._pool.submit(read, *args, **kwargs))

    def db(self) -> Connection:
        """Returns the reader's connection, opened on first use; raises what
        ``server.db.connection.ERRORS`` names when it cannot be opened."""
        if self._db is None:
            self._db = self._opened()
        return self._db

    def close(self) -> None:
        """Waits for the reads under way, then closes the connection."""
        self._pool.shutdown(wait=True)
        if self._db is not None:
            self._db.close()
            self._db = None
