"""What the ladder has under way that a drain must see through: matches on their way
to a stored result, scheduling passes on their way to the matches they formed.

Shared by the ladder and its lobby (both start such work), so neither reaches into
the other for it.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import structlog

from server.db.connection import ERRORS
from server.db.writer import Writer

log = structlog.get_logger()

P = ParamSpec("P")
T = TypeVar("T")

#: The longest pause between two tries of a ladder write that failed (seconds).
STORE_RETRY_MAX_S = 5.0

#: How long a failing ladder write is still tried once the ladder has stopped (seconds).
STORE_GIVE_UP_S = 20.0


class Settling:
    """The tasks a drain awaits and never cancels, and the writes (on ``writer``)
    that are tried again until they are stored."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        #: Set once the ladder has stopped: failing writes are then given up after
        #: STORE_GIVE_UP_S.
        self.stopped = False
        self._tasks: set[asyncio.Future[Any]] = set()

    def start(self, settling: Coroutine[object, object, T]) -> asyncio.Future[T]:
        """Returns the task of ``settling``, which the drain awaits (:meth:`settled`)
        and never cancels."""
        task = asyncio.ensure_future(settling)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @property
    def running(self) -> list[asyncio.Future[Any]]:
        """Returns the tasks not yet done."""
        return list(self._tasks)

    async def settled(self) -> None:
        """Returns once every task started has ended."""
        # Again until none is left: a settling task may start another.
        while pending := [t for t in self._tasks if not t.done()]:
            await asyncio.gather(*pending, return_exceptions=True)

    async def stored(
        self, match_id: str, write: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Returns what the writer's ``write(*args, **kwargs)`` returns, trying again
        after a failure (with growing pauses, up to :data:`STORE_RETRY_MAX_S`) for as
        long as the server runs, and for :data:`STORE_GIVE_UP_S` more once the ladder
        has stopped; then raises the last failure.

        Why: a match's row marks its bots as seated, on every host of a shared
        database; a result left unwritten would keep them out of the ladder (until
        this host restarts and settles it)."""
        pause = 0.2
        gave_up_at: float | None = None
        for attempt in itertools.count(1):
            try:
                return await self.writer.run(write, *args, **kwargs)
            except ERRORS as e:
                now = time.monotonic()
                if self.stopped:
                    gave_up_at = gave_up_at or now + STORE_GIVE_UP_S
                    if now >= gave_up_at:
                        raise
                log.warning(
                    "ladder_store_failed",
                    match=match_id,
                    attempt=attempt,
                    error=str(e),
                    retry_s=pause,
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, STORE_RETRY_MAX_S)
        raise AssertionError("unreachable")
