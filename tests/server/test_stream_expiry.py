"""Streams of an ended match end once the server lets go of the match (its hold,
``keep_ended``), whether or not their clients read: a real server on port 0, on a
clock the test moves by hand, and clients that open Watch, Observe, Play and
PlayMatches and never read them, over a connection with a small flow-control window."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.app import create_server
from server.status import MatchStatus

from .client import seat_metadata
from .clocks import ManualClock

SMALL_WINDOW: Any = [
    # The client's window stays small (no growth from bandwidth probes), so a stream
    # that is not read holds up its server's writes after a few messages.
    ("grpc.http2.lookahead_bytes", 1024),
    ("grpc.http2.bdp_probe", 0),
]


async def _until(condition: Any, seconds: float = 10.0) -> None:
    """Returns once ``condition()`` holds, polling; fails after ``seconds``."""
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.01)


async def _status(call: Any) -> grpc.StatusCode:
    """Reads a call to its end; returns its status code."""
    try:
        async for _ in call:
            pass
    except grpc.aio.AioRpcError as e:
        return e.code()
    code: grpc.StatusCode = await call.code()
    return code


def test_streams_that_are_not_read_end_when_the_match_is_let_go(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        arena, port = await create_server(
            "127.0.0.1:0", db_path=tmp_path / "arena.db", organiser_key="k", clock=clock
        )
        await arena.start()
        runners = arena.runners
        try:
            async with (
                grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=SMALL_WINDOW) as silent,
                grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
            ):
                runner = runners.create_match(5, seed=29, deadline_ms=60_000)
                seat = pb_grpc.SeatStub(silent)
                # Watch, Observe, Play and PlayMatches, none ever read.
                calls: list[Any] = [
                    pb_grpc.SpectateStub(silent).Watch(pb.WatchRequest(match_id=runner.id))
                ]
                calls += [
                    seat.Observe(pb.ObserveRequest(), metadata=seat_metadata(t))
                    for t in runner.tokens[:2]
                ]
                play = seat.Play(metadata=seat_metadata(runner.tokens[2]))
                await play.write(pb.PlayRequest(observe=pb.ObserveRequest()))
                calls.append(play)
                many = seat.PlayMatches()
                await many.write(pb.PlayRequest(sit=pb.SitRequest(seat_token=runner.tokens[3])))
                calls.append(many)
                await _until(lambda: runners.streams_open.count == 5)
                runner.join(4)
                # The match is played to its end on the server's side.
                while (d := runner.match.decision) is not None:
                    assert runner.answer(d.seat, d.id, 0, None).accepted
                    await asyncio.sleep(0)
                result = await asyncio.wait_for(runner.result(), 30)
                assert result.status == MatchStatus.FINISHED
                # Each stream has its end to send, and waits on a client that does not read.
                await asyncio.sleep(0.5)
                assert runners.streams_open.count == 5
                assert runners.get(runner.id) is runner
                # The hold of the ended match is over: the server lets go of it, and of
                # every stream of it, written to or not.
                clock.advance(runners.keep_ended)
                assert runners.get(runner.id) is None
                await _until(lambda: runners.streams_open.count == 0)
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await anext(
                        aiter(
                            pb_grpc.SpectateStub(channel).Watch(
                                pb.WatchRequest(match_id=runner.id), timeout=10
                            )
                        )
                    )
                assert caught.value.code() == grpc.StatusCode.NOT_FOUND
                # Each call, read at last, gets what was on its way, then NOT_FOUND.
                for call in calls:
                    assert await asyncio.wait_for(_status(call), 10) == grpc.StatusCode.NOT_FOUND
                    assert runner.id in await call.details()
        finally:
            await arena.drain(grace=1)

    asyncio.run(go())
