"""A minimal test client built on the generated stubs alone (no SDK, no rules).

It plays a seat by picking among the options each decision request carries, as
any client written from the .proto files would: the open decision a stream's
snapshot carries (``Snapshot.decision``) and every ``decision`` event after it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

MATCH_TIMEOUT_S = 60.0
MAMMAMIA = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "mammamia"

Chooser = Callable[[pb.DecisionRequest], int | None]
"""Returns the option index to answer with, or None to leave the decision unanswered."""


def first_option(request: pb.DecisionRequest) -> int:
    """Returns 0: always the first option."""
    return 0


def random_options(seed: int) -> Chooser:
    """Returns a chooser that picks uniformly among the options."""
    rng = random.Random(seed)
    return lambda request: rng.randrange(len(request.options))


@dataclass
class SeatPlay:
    """What one seat received and answered."""

    events: list[pb.SeatEvent] = field(default_factory=list)
    messages: list[pb.SeatEvents] = field(default_factory=list)
    decisions: list[pb.DecisionRequest] = field(default_factory=list)  # snapshots' too
    answered: list[str] = field(default_factory=list)
    results: list[pb.ActResult] = field(default_factory=list)
    responses: list[pb.ActResponse] = field(default_factory=list)  # of unary Act

    @property
    def snapshots(self) -> list[pb.Snapshot]:
        """Returns the snapshots received (one per stream)."""
        return [e.snapshot for e in self.events if e.HasField("snapshot")]

    @property
    def numbered(self) -> list[pb.SeatEvent]:
        """Returns the numbered log events received, the snapshots' history included,
        in the order received."""
        out: list[pb.SeatEvent] = []
        for e in self.events:
            if e.HasField("snapshot"):
                out.extend(e.snapshot.history)
            elif e.sequence:
                out.append(e)
        return out

    @property
    def ended(self) -> pb.MatchEnded | None:
        """Returns the MatchEnded event, if one arrived."""
        for e in self.events:
            if e.WhichOneof("event") == "match_ended":
                return e.match_ended
        return None

    @property
    def last_sequence(self) -> int:
        """Returns the highest sequence number seen."""
        return max((e.sequence for e in self.events), default=0)


def seat_metadata(token: str) -> tuple[tuple[str, str], ...]:
    """Returns the call metadata proving a seat."""
    return (("seat-token", token),)


def organiser(channel: grpc.aio.Channel) -> pb_grpc.OrganiserAsyncStub:
    """Returns an Organiser stub."""
    return pb_grpc.OrganiserStub(channel)


async def create_match(
    channel: grpc.aio.Channel, key: str, players: int, **fields: object
) -> pb.CreateMatchResponse:
    """Returns a new match created with the organiser key."""
    request = pb.CreateMatchRequest(players=players, **fields)  # type: ignore[arg-type]
    return await organiser(channel).CreateMatch(
        request, metadata=(("organiser-key", key),), timeout=10
    )


async def play(
    channel: grpc.aio.Channel,
    token: str,
    choose: Chooser = first_option,
    after: int = 0,
    name: str = "",
    stop: Callable[[SeatPlay], bool] | None = None,
    into: SeatPlay | None = None,
) -> SeatPlay:
    """Returns the seat's events after playing it on the Play stream until the match
    ends (or ``stop`` says so, which drops the stream as a crashing client would)."""
    seat = pb_grpc.SeatStub(channel)
    meta = seat_metadata(token)
    await seat.Join(pb.JoinRequest(name=name), metadata=meta, timeout=10)
    out = into or SeatPlay()
    queue: asyncio.Queue[pb.PlayRequest | None] = asyncio.Queue()
    queue.put_nowait(pb.PlayRequest(observe=pb.ObserveRequest(after_sequence=after)))

    async def requests() -> AsyncIterator[pb.PlayRequest]:
        while (req := await queue.get()) is not None:
            yield req

    call = seat.Play(requests(), metadata=meta)
    async with asyncio.timeout(MATCH_TIMEOUT_S):
        async for message in call:
            out.messages.append(message)
            if _take(message, out, choose, queue.put_nowait, stop):
                call.cancel()
                break
    queue.put_nowait(None)
    return out


def _take(
    message: pb.SeatEvents,
    out: SeatPlay,
    choose: Chooser,
    send: Callable[[pb.PlayRequest], None],
    stop: Callable[[SeatPlay], bool] | None,
) -> bool:
    """Returns whether ``stop`` says to drop the stream, after recording the message's
    events in order and answering its decisions through ``send``."""
    for event in message.events:
        out.events.append(event)
        kind = event.WhichOneof("event")
        request = _asked(event)
        if request is not None:
            out.decisions.append(request)
            choice = choose(request)
            if choice is not None:
                out.answered.append(request.decision_id)
                send(
                    pb.PlayRequest(
                        act=pb.ActRequest(decision_id=request.decision_id, option=choice)
                    )
                )
        elif kind == "act_result":
            out.results.append(event.act_result)
        if stop is not None and stop(out):
            return True
    return False


async def observe_and_act(
    channel: grpc.aio.Channel, token: str, choose: Chooser = first_option, after: int = 0
) -> SeatPlay:
    """Returns the seat's events after playing it with Observe and unary Act calls."""
    seat = pb_grpc.SeatStub(channel)
    meta = seat_metadata(token)
    out = SeatPlay()
    async with asyncio.timeout(MATCH_TIMEOUT_S):
        async for message in seat.Observe(pb.ObserveRequest(after_sequence=after), metadata=meta):
            out.messages.append(message)
            for event in message.events:
                out.events.append(event)
                request = _asked(event)
                if request is not None:
                    out.decisions.append(request)
                    choice = choose(request)
                    if choice is not None:
                        out.responses.append(
                            await seat.Act(
                                pb.ActRequest(decision_id=request.decision_id, option=choice),
                                metadata=meta,
                                timeout=10,
                            )
                        )
                        out.answered.append(request.decision_id)
    return out


def _asked(event: pb.SeatEvent) -> pb.DecisionRequest | None:
    """Returns the decision request an event asks: a decision event's, or the open
    decision a snapshot carries; None for other events."""
    if event.HasField("decision"):
        return event.decision
    if event.HasField("snapshot") and event.snapshot.HasField("decision"):
        return event.snapshot.decision
    return None


async def watch(channel: grpc.aio.Channel, match_id: str, after: int = 0) -> list[pb.SeatEvent]:
    """Returns a spectator's events of a match, to its end."""
    stub = pb_grpc.SpectateStub(channel)
    events: list[pb.SeatEvent] = []
    async with asyncio.timeout(MATCH_TIMEOUT_S):
        async for message in stub.Watch(pb.WatchRequest(match_id=match_id, after_sequence=after)):
            events.extend(message.events)
    return events
