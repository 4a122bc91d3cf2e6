"""A ladder bot's PlayMatches call that breaks or is taken: the seat is played on a Play
call of its own (resumed where the call broke), and the next seats on PlayMatches again.

The bot plays through ``CuttingRelay``, a gRPC proxy in front of a real server that
forwards every call the SDK makes and steps into the first PlayMatches call: it cuts it
in the middle of a match, or holds back the end of its first match until the next
assignment has been sent, so that the bot's table is still taken when that match comes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from structlog.testing import capture_logs

from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from client_sdk.connection import play_ladder, register
from mammamia import view_of
from mammamia_pb import arena_pb2 as pb

from .relay import PLAY_MATCHES, Relay
from .support import Recording, match_record

TIMEOUT_S = 60
MATCHES = 3
ANSWERS_BEFORE_CUT = 2
"""Answers the first PlayMatches call carries in its match before it is cut."""


@pytest.fixture
def ladder(start_server: Any) -> Any:
    return start_server(ladder_players="2-2")


@dataclass(frozen=True)
class Cut:
    """Where the first PlayMatches call breaks, once ``ANSWERS_BEFORE_CUT`` answers of
    its match have gone up: ``where`` "request", instead of passing on the next decision
    request (the seat's decision stays open); "answer", instead of passing on the next
    answer (the bot answered, the server never heard). ``how`` it ends: "unavailable"
    (status UNAVAILABLE, as a connection lost) or "closed" (OK without match_ended)."""

    where: str
    how: str


class CuttingRelay(Relay):
    """A ``Relay`` (forwarding every call the SDK makes) that steps into the first
    PlayMatches call: with ``cut``, breaks it in its first match (whose id it keeps in
    ``cut_match``); with ``hold_end``, holds the first match's end back (``held_match``)
    until a seat has been joined (the bot's next match, on a Join call since its table
    is still taken). It keeps the matches the Enter stream assigns in ``assigned``."""

    def __init__(self, target: str, *, cut: Cut | None = None, hold_end: bool = False) -> None:
        super().__init__(target)
        self.cut = cut
        self.hold_end = hold_end
        self.cut_match = ""
        self.held_match = ""
        self.assigned: list[str] = []
        self.joined = asyncio.Event()

    async def unary_unary(self, method: str, request: bytes, context: Any) -> bytes:
        """Returns the server's reply to a Join, noting that a seat has been joined."""
        try:
            return await super().unary_unary(method, request, context)
        finally:
            self.joined.set()

    async def unary_stream(self, method: str, request: bytes, context: Any) -> AsyncIterator[bytes]:
        """Yields the Enter stream's assignments, noting each."""
        async for reply in super().unary_stream(method, request, context):
            self.assignment(reply)
            yield reply

    async def stream_stream(
        self, method: str, requests: AsyncIterator[bytes], context: Any
    ) -> AsyncIterator[bytes]:
        """Yields the server's replies of a Play or PlayMatches call, stepping into
        PlayMatches as told."""
        if method != PLAY_MATCHES:
            async for reply in super().stream_stream(method, requests, context):
                yield reply
            return
        async for reply in self.play_matches(
            self.calls["PlayMatches"], requests, context, self.open(method, context)
        ):
            yield reply

    def assignment(self, reply: bytes) -> None:
        """Notes a match the Enter stream sends (the server may send one again)."""
        match_id = pb.Assignment.FromString(reply).match_id
        if match_id not in self.assigned:
            self.assigned.append(match_id)

    async def play_matches(self, number: int, requests: Any, context: Any, call: Any) -> Any:
        """Yields the server's messages of PlayMatches call ``number`` (1: the first)
        after passing the client's on, breaking or holding the first call's as told."""
        cut = self.cut if number == 1 else None
        answers = 0  # of the match in play, passed on
        match_id = ""
        broken = asyncio.Event()

        async def pump() -> None:
            nonlocal answers
            async for request in requests:
                if pb.PlayRequest.FromString(request).WhichOneof("message") == "act":
                    if (
                        cut is not None
                        and cut.where == "answer"
                        and match_id
                        and answers >= ANSWERS_BEFORE_CUT
                        and not self.cut_match
                    ):
                        self.cut_match = match_id
                        broken.set()
                        return
                    answers += 1
                await call.write(request)
            await call.done_writing()

        pumping = asyncio.ensure_future(pump())
        breaking = asyncio.ensure_future(broken.wait())
        try:
            while True:
                reading = asyncio.ensure_future(call.read())
                await asyncio.wait({reading, breaking}, return_when=asyncio.FIRST_COMPLETED)
                if broken.is_set():
                    reading.cancel()
                    break
                reply = reading.result()
                if reply is grpc.aio.EOF:
                    code = await call.code()
                    if code != grpc.StatusCode.OK:
                        context.set_code(code)
                        context.set_details(await call.details())
                    return
                events = list(pb.SeatEvents.FromString(reply).events)
                kinds = {e.WhichOneof("event") for e in events}
                for e in events:
                    if e.WhichOneof("event") == "snapshot" and e.snapshot.match_id != match_id:
                        match_id, answers = e.snapshot.match_id, 0
                if (
                    cut is not None
                    and cut.where == "request"
                    and not self.cut_match
                    and answers >= ANSWERS_BEFORE_CUT
                    and "decision" in kinds
                    and "match_ended" not in kinds
                ):
                    self.cut_match = match_id
                    break
                if "match_ended" in kinds:
                    if self.hold_end and number == 1 and not self.held_match:
                        self.held_match = match_id
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(self.joined.wait(), TIMEOUT_S)
                    match_id = ""
                yield reply
            # Broken: the server's side goes (the seat's stream with it), then the client's.
            assert cut is not None
            call.cancel()
            if cut.how == "unavailable":
                context.set_code(grpc.StatusCode.UNAVAILABLE)
                context.set_details("the relay cut the call")
        finally:
            pumping.cancel()
            breaking.cancel()
            call.cancel()


def play_through(
    ladder: Any, relay: CuttingRelay
) -> tuple[list[int], list[Recording], list[MutableMapping[str, Any]]]:
    """Returns the matches each bot played, gina's bots (one per match, in order) and
    the logs, after gina (through ``relay``) and hugo (straight to the server) played
    ``MATCHES`` matches on the ladder."""
    bots: list[Recording] = []

    def recording() -> Recording:
        bots.append(Recording(GreedyBot()))
        return bots[-1]

    async def main() -> list[int]:
        keys = [await register(ladder.address, name) for name in ("gina", "hugo")]
        async with relay:
            return list(
                await asyncio.gather(
                    play_ladder(recording, relay.address, "gina", keys[0], matches=MATCHES),
                    play_ladder(RandomBot, ladder.address, "hugo", keys[1], matches=MATCHES),
                )
            )

    with capture_logs() as logs:
        played = asyncio.run(asyncio.wait_for(main(), TIMEOUT_S))
    return played, bots, logs


def gina_logs(
    ladder: Any, relay: CuttingRelay, logs: list[MutableMapping[str, Any]]
) -> dict[str, list[MutableMapping[str, Any]]]:
    """Returns gina's log entries (those naming her seat) of each match she played."""
    entries = {}
    for match_id in relay.assigned[:MATCHES]:
        seat = match_record(ladder, match_id).meta["names"].index("gina")
        entries[match_id] = [
            e for e in logs if e.get("match") == match_id and e.get("seat") == seat
        ]
    return entries


def seated(events: Iterable[str]) -> list[str]:
    """Returns the events that tell how a seat was taken: on PlayMatches (``seat_taken``),
    on Join for the first time (``seat_joined``) or again (``seat_rejoined``)."""
    return [e for e in events if e in {"seat_taken", "seat_joined", "seat_rejoined"}]


def assert_played_by_the_bot(ladder: Any, match_id: str, bot: Recording) -> None:
    """Asserts that every decision of gina's seat in ``match_id`` was the bot's: none
    left to the server, and the bot shown exactly the rules' views of the seat."""
    record = match_record(ladder, match_id)
    seat = record.meta["names"].index("gina")
    assert not [t for t in record.meta["timeouts"] if t["seat"] == seat]
    assert not [a for a in record.meta["autopilot"] if a["seat"] == seat]
    assert bot.views == [view_of(s, seat) for s in record.states() if s.to_act == seat]


@pytest.mark.parametrize(
    "cut",
    [
        Cut("request", "unavailable"),
        Cut("request", "closed"),
        Cut("answer", "unavailable"),
        Cut("answer", "closed"),
    ],
    ids=lambda c: f"{c.where}-{c.how}",
)
def test_a_match_whose_play_matches_call_broke_is_resumed_on_play(ladder: Any, cut: Cut) -> None:
    relay = CuttingRelay(ladder.address, cut=cut)
    played, bots, logs = play_through(ladder, relay)
    assert played == [MATCHES, MATCHES]
    assert relay.cut_match == relay.assigned[0]
    mine = gina_logs(ladder, relay, logs)
    # The match cut off goes on on a Play call of its own: joined again, where it was.
    events = [e["event"] for e in mine[relay.cut_match]]
    assert seated(events) == ["seat_taken", "seat_rejoined"]
    assert ("connection_lost" if cut.how == "unavailable" else "stream_closed") in events
    rejoined = next(e for e in mine[relay.cut_match] if e["event"] == "seat_rejoined")
    assert rejoined["after_sequence"] > 0
    # Every match is played to its end by the bot, the one cut off included.
    for match_id, bot in zip(relay.assigned[:MATCHES], bots[:MATCHES], strict=True):
        (ended,) = [e for e in mine[match_id] if e["event"] == "match_ended"]
        assert (ended["status"], ended["replaced"]) == ("finished", 0)
        assert_played_by_the_bot(ladder, match_id, bot)
    # The next matches are played on PlayMatches again, on a call of its own.
    for match_id in relay.assigned[1:MATCHES]:
        assert seated(e["event"] for e in mine[match_id]) == ["seat_taken"]
    assert relay.calls["PlayMatches"] == 2
    assert (relay.calls["Join"], relay.calls["Play"]) == (1, 1)


def test_a_match_that_finds_the_table_taken_is_joined_on_play(ladder: Any) -> None:
    relay = CuttingRelay(ladder.address, hold_end=True)
    played, bots, logs = play_through(ladder, relay)
    assert played == [MATCHES, MATCHES]
    first, second, *_ = relay.assigned
    assert relay.held_match == first
    mine = gina_logs(ladder, relay, logs)
    # The second match came while the first still held the PlayMatches call: it is
    # played on Join and Play, and its seat joined (never taken before) there.
    assert seated(e["event"] for e in mine[second]) == ["seat_joined"]
    for match_id in (first, *relay.assigned[2:MATCHES]):
        assert seated(e["event"] for e in mine[match_id]) == ["seat_taken"]
    for match_id, bot in zip(relay.assigned[:MATCHES], bots[:MATCHES], strict=True):
        (ended,) = [e for e in mine[match_id] if e["event"] == "match_ended"]
        assert (ended["status"], ended["replaced"]) == ("finished", 0)
        assert_played_by_the_bot(ladder, match_id, bot)
    assert relay.calls["PlayMatches"] == 1
    assert (relay.calls["Join"], relay.calls["Play"]) == (1, 1)
