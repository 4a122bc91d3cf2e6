"""What the ladder needs of the server's matches (:class:`MatchHost`), how a match
ended (:class:`Outcome`), and the errors of an entry.

Its own module, so that both the ladder (``server.ladder.ladder``) and its part for
many hosts (``server.ladder.hosts``) use them without importing each other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from mammamia.fairness import DealSet

from ..db.ladder.rows import LadderError, SeatResult
from .assignment import Assignment

#: Put on an entry's queue to end it because a newer entry of the same bot took over.
REPLACED = "replaced"

#: An entry's queue: its assignments, REPLACED, or None when the ladder stops.
EntryQueue = asyncio.Queue[Assignment | str | None]


class UnknownBotError(LadderError):
    """A bot name that is not registered, or a key that is not its key."""


class LadderClosedError(LadderError):
    """The ladder has stopped (the server is shutting down)."""


class ReplacedError(LadderError):
    """The bot entered again on another stream, which takes over from this one."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a match ended: ``finished`` with ranks and pizzas per seat, or ``aborted``."""

    status: str
    ranks: tuple[int, ...] = ()
    delivered: tuple[int, ...] = ()
    first_player: int | None = None  # who started round 1 (None: not known)

    def seats(self) -> list[SeatResult]:
        """Returns the seats' results with their positions in round 1's order."""
        n = len(self.ranks)
        first = self.first_player
        return [
            SeatResult(rank, delivered, None if first is None else (s - first) % n + 1)
            for s, (rank, delivered) in enumerate(zip(self.ranks, self.delivered, strict=True))
        ]


class MatchHost(Protocol):
    """What the ladder needs of the server: create matches, learn how they ended."""

    async def create(
        self,
        names: Sequence[str],
        deal_set: tuple[DealSet, str] | None = None,
        *,
        match_id: str | None = None,
        tokens: Sequence[str] | None = None,
    ) -> tuple[str, list[str], str]:
        """Returns (match id, seat tokens in seat order, commitment) of a new ladder
        match, one of a duplicate set with ``deal_set`` (its place, the set's server
        seed), with the given id and tokens when given (a ladder of many hosts records
        them first); raises LadderClosedError when no match can start any more."""
        ...

    async def outcome(self, match_id: str) -> Outcome:
        """Returns the match's outcome once it has ended and its record is stored."""
        ...

    def stored_outcome(self, match_id: str) -> Outcome | None:
        """Returns the stored outcome of an ended match, or None (unknown or cut off)."""
        ...

    def record(self, match_id: str) -> str | None:
        """Returns the stored game record (JSON text) of an ended match, or None."""
        ...


class Entry:
    """A bot's entry, already recorded: its assignments, as an async iterator, until
    the ladder stops. Iterating raises ReplacedError when a newer entry of the bot
    took over. ``close`` ends the entry (the caller's part when its stream ends)."""

    def __init__(self, name: str, queue: EntryQueue, leave: Callable[[], None]) -> None:
        self.name = name
        self._queue = queue
        self._leave: Callable[[], None] | None = leave

    def __aiter__(self) -> Entry:
        return self

    async def __anext__(self) -> Assignment:
        """Returns the next assignment; raises StopAsyncIteration once the ladder has
        stopped, ReplacedError once a newer entry took over."""
        item = await self._queue.get()
        if item is None:
            self._queue.put_nowait(None)  # stays ended
            raise StopAsyncIteration
        if isinstance(item, Assignment):
            return item
        self._queue.put_nowait(item)
        raise ReplacedError(
            f"bot {self.name!r} entered the ladder again elsewhere; the newer entry plays"
        )

    def close(self) -> None:
        """Ends the entry (once; later calls do nothing)."""
        leave, self._leave = self._leave, None
        if leave is not None:
            leave()
