"""The server's matches as the ladder sees them: create one, learn how it ended.

:class:`Matches` is what the ladder needs (tests give it matches that never play);
:class:`ServerMatches` is the server's (``server.runners``). :class:`MatchEnd` is how a
ladder match ended, as the ladder stores and rates it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from mammamia import RecordError
from mammamia.fairness import DealSet
from mammamia.record import loads
from server.db.ladder.rows import LadderError, SeatResult
from server.notes import SeatNotes
from server.runners import Draining, Runners


class LadderClosedError(LadderError):
    """The ladder has stopped (the server is shutting down)."""


@dataclass(frozen=True, slots=True)
class MatchEnd:
    """How a match ended: ``finished`` with ranks and pizzas per seat, or ``aborted``;
    ``first_player`` is the seat that began round 1 (None: not known); ``autopilot``
    the seats the server's default policy played to the end (strikes in a row)."""

    status: str
    ranks: tuple[int, ...] = ()
    delivered: tuple[int, ...] = ()
    first_player: int | None = None
    autopilot: frozenset[int] = frozenset()

    def seats(self) -> list[SeatResult]:
        """Returns the seats' results with their positions in round 1's order."""
        n = len(self.ranks)
        first = self.first_player
        return [
            SeatResult(
                rank, delivered, None if first is None else (s - first) % n + 1, s in self.autopilot
            )
            for s, (rank, delivered) in enumerate(zip(self.ranks, self.delivered, strict=True))
        ]


class Matches(Protocol):
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
        seed), with the given id and tokens when given (a shared lobby records them
        first); raises LadderClosedError when no match can start any more."""
        ...

    async def result(self, match_id: str) -> MatchEnd:
        """Returns how the match ended, once it has and its record is stored."""
        ...

    def stored_result(self, match_id: str) -> MatchEnd | None:
        """Returns how an ended match ended, as stored, or None (unknown or cut off)."""
        ...

    def record(self, match_id: str) -> str | None:
        """Returns the stored game record (JSON text) of an ended match, or None."""
        ...

    def notes(self, match_id: str) -> Sequence[SeatNotes]:
        """Returns the notes the seats of an ended match left (server.notes), for
        their owners' records only."""
        ...

    def commitment(self, match_id: str) -> str:
        """Returns the commitment to its seed of a match this server runs (resumed,
        its seats announced again), or "" (none, or not running here)."""
        ...


class ServerMatches:
    """The server's matches and their storage, as the ladder needs them."""

    def __init__(
        self, runners: Runners, *, deadline_ms: int = 0, start_timeout: float = 10.0
    ) -> None:
        self.runners = runners
        self.deadline_ms = deadline_ms
        self.start_timeout = start_timeout

    async def create(
        self,
        names: Sequence[str],
        deal_set: tuple[DealSet, str] | None = None,
        *,
        match_id: str | None = None,
        tokens: Sequence[str] | None = None,
    ) -> tuple[str, list[str], str]:
        """Returns (match id, seat tokens, commitment) of a new ladder match (of a
        duplicate set with ``deal_set``), with the given id and tokens when given;
        raises LadderClosedError once the server drains."""
        try:
            runner = self.runners.create_match(
                len(names),
                names=names,
                ladder=True,
                deadline_ms=self.deadline_ms,
                start_timeout=self.start_timeout,
                deal_set=deal_set,
                match_id=match_id,
                tokens=tokens,
            )
        except Draining as e:
            raise LadderClosedError(str(e)) from None
        fair = runner.match.fairness
        return runner.id, list(runner.tokens), fair.commitment if fair is not None else ""

    async def result(self, match_id: str) -> MatchEnd:
        """Returns how the match ended, once the server has stored its record."""
        runner = self.runners.get(match_id)
        result = await self.runners.result(match_id)
        return MatchEnd(
            result.status,
            tuple(result.ranks),
            tuple(result.delivered),
            result.first_player,
            frozenset(runner.match.autopilot) if runner is not None else frozenset(),
        )

    def stored_result(self, match_id: str) -> MatchEnd | None:
        """Returns how ``match_id`` ended as the server stored it, or None. (After a
        crash the stored record is all there is to say who began round 1.)"""
        row = self.runners.storage.match(match_id)
        if row is None or not row.status.ended:
            return None
        record = self.runners.storage.record(match_id)
        first, autopilot = None, frozenset[int]()
        try:
            if record:
                loaded = loads(record)
                first = loaded.first_player
                autopilot = frozenset(int(a["seat"]) for a in loaded.meta.get("autopilot", ()))
        except (RecordError, KeyError, TypeError, ValueError):
            pass
        return MatchEnd(row.status, tuple(row.ranks), tuple(row.delivered), first, autopilot)

    def record(self, match_id: str) -> str | None:
        """Returns the stored game record of an ended match, or None."""
        return self.runners.storage.record(match_id)

    def notes(self, match_id: str) -> Sequence[SeatNotes]:
        """Returns the notes the seats of an ended match left, by seat."""
        return self.runners.storage.notes(match_id)

    def commitment(self, match_id: str) -> str:
        """Returns the commitment to its seed of a match this server runs, or ""."""
        runner = self.runners.get(match_id)
        fair = runner.match.fairness if runner is not None else None
        return fair.commitment if fair is not None else ""
