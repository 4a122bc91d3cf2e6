"""Organiser.CreateMatches on a real server: one call creates match after match,
each answered in order as CreateMatch would; a request CreateMatch would refuse ends
the call with its status and keeps the matches made before; the organiser key is
checked as the call opens."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import play

if TYPE_CHECKING:
    from tests.conftest import RunningServer


async def requests(*made: pb.CreateMatchRequest) -> AsyncIterator[pb.CreateMatchRequest]:
    for request in made:
        yield request


async def open_after(
    ended: asyncio.Event, *made: pb.CreateMatchRequest
) -> AsyncIterator[pb.CreateMatchRequest]:
    """Yields ``made``, then keeps the client's side open until ``ended`` is set: once
    a refusal is on its way nothing more is written nor closed, since grpc.aio reports
    a write that fails as the call ends as INTERNAL, not the server's status
    (grpc/grpc#36066)."""
    for request in made:
        yield request
    await ended.wait()


def test_one_call_creates_match_after_match(server: RunningServer) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            organiser = pb_grpc.OrganiserStub(channel)
            asked = [pb.CreateMatchRequest(players=n, seed=40 + n) for n in (2, 3, 5)]
            call = organiser.CreateMatches(
                requests(*asked), metadata=(("organiser-key", server.organiser_key),)
            )
            made = [response async for response in call]
            assert await call.code() == grpc.StatusCode.OK
            assert [len(m.seat_tokens) for m in made] == [2, 3, 5]
            assert len({m.match_id for m in made}) == 3
            listed = await organiser.ListMatches(
                pb.ListMatchesRequest(),
                metadata=(("organiser-key", server.organiser_key),),
                timeout=10,
            )
            assert {m.match_id for m in made} <= {m.match_id for m in listed.matches}
            # The seats are real: the two-player match plays to its end.
            played = await asyncio.gather(*(play(channel, t) for t in made[0].seat_tokens))
            assert all(p.ended is not None for p in played)

    asyncio.run(scenario())


def test_a_refused_request_ends_the_call_and_keeps_the_matches_before(
    server: RunningServer,
) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            organiser = pb_grpc.OrganiserStub(channel)
            ended = asyncio.Event()
            call = organiser.CreateMatches(
                open_after(
                    ended, pb.CreateMatchRequest(players=2), pb.CreateMatchRequest(players=9)
                ),
                metadata=(("organiser-key", server.organiser_key),),
            )
            made = []
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                async for response in call:
                    made.append(response)
            ended.set()
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "players" in (refused.value.details() or "")
            assert len(made) == 1
            listed = await organiser.ListMatches(
                pb.ListMatchesRequest(),
                metadata=(("organiser-key", server.organiser_key),),
                timeout=10,
            )
            assert made[0].match_id in {m.match_id for m in listed.matches}

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "key, code",
    [("", grpc.StatusCode.UNAUTHENTICATED), ("wrong", grpc.StatusCode.PERMISSION_DENIED)],
)
def test_the_organiser_key_is_checked_as_the_call_opens(
    server: RunningServer, key: str, code: grpc.StatusCode
) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            ended = asyncio.Event()
            call = pb_grpc.OrganiserStub(channel).CreateMatches(
                open_after(ended, pb.CreateMatchRequest(players=2)),
                metadata=(("organiser-key", key),) if key else (),
            )
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                async for _ in call:
                    raise AssertionError("a match was created without the right key")
            ended.set()
            assert refused.value.code() == code

    asyncio.run(scenario())
