"""Seat.PlayMatches on a real server: one call plays one seat after another, each
match exactly as a Play call of that seat would (the same events, from a Snapshot to
`match_ended`); a `sit` while a match is in play is refused with an act result and
changes nothing; a bad `sit` ends the call with Play's status; the call closes with
OK once the client has closed its side."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import MATCH_TIMEOUT_S, Chooser, SeatPlay, _take, create_match, play, random_options

if TYPE_CHECKING:
    from tests.conftest import RunningServer


class Matches:
    """A client's PlayMatches call: :meth:`sit` plays one seat to its match's end."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._queue: asyncio.Queue[pb.PlayRequest | None] = asyncio.Queue()

        async def requests() -> AsyncIterator[pb.PlayRequest]:
            while (req := await self._queue.get()) is not None:
                yield req

        self.call = pb_grpc.SeatStub(channel).PlayMatches(requests())
        self._messages = aiter(self.call)

    def send(self, request: pb.PlayRequest) -> None:
        self._queue.put_nowait(request)

    async def sit(
        self,
        token: str,
        choose: Chooser,
        after: int = 0,
        also: pb.PlayRequest | None = None,
        **joining: Any,
    ) -> SeatPlay:
        """Returns the seat's events, from its Snapshot to ``match_ended``, after
        playing it with ``choose`` (sending ``also`` once, after the snapshot);
        ``joining`` are SitRequest's name and client seed."""
        out = SeatPlay()
        self.send(
            pb.PlayRequest(sit=pb.SitRequest(seat_token=token, after_sequence=after, **joining))
        )
        async with asyncio.timeout(MATCH_TIMEOUT_S):
            while out.ended is None:
                message = await anext(self._messages)
                out.messages.append(message)
                _take(message, out, choose, self.send, None)
                if also is not None:
                    self.send(also)
                    also = None
        return out

    async def close(self) -> grpc.StatusCode:
        """Returns the call's status after closing the client's side."""
        self._queue.put_nowait(None)
        async with asyncio.timeout(MATCH_TIMEOUT_S):
            async for _ in self._messages:
                raise AssertionError("a message after the client closed between matches")
        return await self.call.code()


def kinds(seat: SeatPlay) -> list[tuple[int, str | None]]:
    """Returns each numbered event's (sequence, kind), in order."""
    return [(e.sequence, e.WhichOneof("event")) for e in seat.numbered]


def test_one_call_plays_match_after_match_as_play_would(server: RunningServer) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            key = server.organiser_key
            calls = [Matches(channel), Matches(channel)]
            for seed in (11, 12, 13):
                created = await create_match(channel, key, 2, seed=seed)
                seated = zip(calls, created.seat_tokens, strict=True)
                played = await asyncio.gather(
                    *(
                        call.sit(token, random_options(seed + i))
                        for i, (call, token) in enumerate(seated)
                    )
                )
                # The same match played on Play streams, seat for seat.
                again = await create_match(channel, key, 2, seed=seed)
                on_play = await asyncio.gather(
                    *(
                        play(channel, token, random_options(seed + i))
                        for i, token in enumerate(again.seat_tokens)
                    )
                )
                for mine, theirs in zip(played, on_play, strict=True):
                    assert mine.events[0].HasField("snapshot")
                    assert mine.events[-1].HasField("match_ended")
                    assert sum(e.HasField("match_ended") for e in mine.events) == 1
                    assert kinds(mine) == kinds(theirs) and kinds(mine)
                    assert mine.ended is not None and theirs.ended is not None
                    assert list(mine.ended.ranks) == list(theirs.ended.ranks)
                    assert all(r.accepted for r in mine.results)
            assert [await call.close() for call in calls] == [grpc.StatusCode.OK] * 2

    asyncio.run(scenario())


def test_a_sit_while_a_match_is_in_play_is_refused_and_changes_nothing(
    server: RunningServer,
) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            first = await create_match(channel, server.organiser_key, 2, seed=5)
            second = await create_match(channel, server.organiser_key, 2, seed=6)
            early = pb.PlayRequest(sit=pb.SitRequest(seat_token=second.seat_tokens[0]))
            calls = [Matches(channel), Matches(channel)]
            played = await asyncio.gather(
                calls[0].sit(first.seat_tokens[0], random_options(1), also=early),
                calls[1].sit(first.seat_tokens[1], random_options(2)),
            )
            refused = [r for r in played[0].results if not r.accepted]
            assert [r.refusal for r in refused] == [pb.REFUSAL_MALFORMED]
            assert "'sit' goes after match_ended" in refused[0].message
            assert played[0].ended is not None
            # The calls go on to the next match as if nothing had been sent.
            after = await asyncio.gather(
                *(
                    call.sit(token, random_options(i))
                    for i, (call, token) in enumerate(zip(calls, second.seat_tokens, strict=True))
                )
            )
            assert all(p.ended is not None and p.events[0].HasField("snapshot") for p in after)
            assert [await call.close() for call in calls] == [grpc.StatusCode.OK] * 2

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "message, code, detail",
    [
        (
            pb.PlayRequest(sit=pb.SitRequest(seat_token="nobody")),
            grpc.StatusCode.UNAUTHENTICATED,
            "unknown sit.seat_token",
        ),
        (
            pb.PlayRequest(observe=pb.ObserveRequest()),
            grpc.StatusCode.INVALID_ARGUMENT,
            "between matches PlayMatches takes only 'sit', got 'observe'",
        ),
    ],
)
def test_a_bad_message_between_matches_ends_the_call(
    server: RunningServer, message: pb.PlayRequest, code: grpc.StatusCode, detail: str
) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=7)
            calls = [Matches(channel), Matches(channel)]
            await asyncio.gather(
                *(
                    call.sit(token, random_options(i))
                    for i, (call, token) in enumerate(zip(calls, created.seat_tokens, strict=True))
                )
            )
            calls[0].send(message)
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await calls[0].close()
            assert failed.value.code() == code
            assert detail in (failed.value.details() or "")
            assert await calls[1].close() == grpc.StatusCode.OK

    asyncio.run(scenario())


def test_a_sit_names_the_seat_and_gives_its_client_seed(server: RunningServer) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2)
            calls = [Matches(channel), Matches(channel)]
            played = await asyncio.gather(
                *(
                    call.sit(token, random_options(i), name=f"bot-{i}", client_seed=f"seed-{i}")
                    for i, (call, token) in enumerate(zip(calls, created.seat_tokens, strict=True))
                )
            )
            ended = played[0].ended
            assert ended is not None
            assert [s.name for s in ended.view.seats] == ["bot-0", "bot-1"]
            assert list(ended.client_seeds) == ["seed-0", "seed-1"]
            # A name too long ends the call, naming the field.
            calls[0].send(
                pb.PlayRequest(sit=pb.SitRequest(seat_token=created.seat_tokens[0], name="x" * 65))
            )
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await calls[0].close()
            assert failed.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "sit.name: at most 64 characters" in (failed.value.details() or "")
            assert await calls[1].close() == grpc.StatusCode.OK

    asyncio.run(scenario())
