"""The programmatic side of the server, as the ladder uses it: creating matches with
names, awaiting results that are stored before anyone hears of them, extensions with
their own service and background task, and tokens of matches no longer held."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.app import Arena, create_server
from server.runners import Draining

from .client import SeatPlay, play, random_options, seat_metadata
from .clocks import ManualClock


class Probe:
    """An extension: a Ladder servicer that answers Standings, and a background task."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    def install(self, arena: Arena) -> None:
        class Ladder(pb_grpc.LadderServicer):
            async def Standings(
                self, request: pb.StandingsRequest, context: Any
            ) -> pb.StandingsResponse:
                return pb.StandingsResponse(matches_finished=len(arena.runners.matches))

        arena.add_service(
            "mammamia.v1.Ladder",
            # The stubs count the methods left out as abstract; the server answers them
            # UNIMPLEMENTED.
            lambda server: pb_grpc.add_LadderServicer_to_server(
                Ladder(),  # type: ignore[abstract]
                server,
            ),
        )
        arena.add_task(self.task)

    async def task(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


def test_matches_results_extensions_and_retired_tokens(tmp_path: Path) -> None:
    probe = Probe()

    async def go() -> None:
        arena, port = await create_server(
            "127.0.0.1:0",
            db_path=tmp_path / "arena.db",
            organiser_key="k",
            extensions=[probe.install],
        )
        await arena.start()
        arena.runners.keep_ended = 0.05
        try:
            await asyncio.wait_for(probe.started.wait(), 10)
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                runner = arena.runners.create_match(
                    3, names=["ann", "bo", "cy"], ladder=True, deadline_ms=10_000, seed=12
                )
                stored_when_announced: list[str | None] = []

                def announced(p: SeatPlay) -> bool:
                    if p.ended is not None:
                        row = arena.storage.match(runner.id)
                        stored_when_announced.append(row.status if row else None)
                    return False

                plays = await asyncio.gather(
                    *(
                        play(channel, t, random_options(i), stop=announced)
                        for i, t in enumerate(runner.tokens)
                    )
                )
                result = await asyncio.wait_for(runner.result(), 10)
                assert result.status == "finished" and result.names == ("ann", "bo", "cy")
                assert stored_when_announced == ["finished"] * 3
                first = plays[0].ended
                assert first is not None
                assert list(first.winners) == list(result.winners)
                assert list(first.ranks) == list(result.ranks)
                assert list(first.delivered) == list(result.delivered)
                # Each seat's end carries its own final view, with the ladder's names.
                for seat, p in enumerate(plays):
                    assert p.ended is not None
                    view = p.ended.view
                    assert view.seat == seat and view.phase == pb.PHASE_OVER
                    assert [s.name for s in view.seats] == ["ann", "bo", "cy"]
                    assert p.events[-1].HasField("match_ended")
                assert result.record == arena.storage.record(runner.id)
                row = arena.storage.match(runner.id)
                assert row is not None and row.ladder

                standings = await pb_grpc.LadderStub(channel).Standings(
                    pb.StandingsRequest(), timeout=10
                )
                assert standings.matches_finished == 1
                health = await health_pb2_grpc.HealthStub(channel).Check(  # type: ignore[attr-defined]
                    health_pb2.HealthCheckRequest(service="mammamia.v1.Ladder"), timeout=10
                )
                assert health.status == health_pb2.HealthCheckResponse.SERVING

                # Once the match is no longer held, its tokens say so.
                async with asyncio.timeout(10):
                    while arena.runners.get(runner.id) is not None:
                        await asyncio.sleep(0.02)
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await pb_grpc.SeatStub(channel).Join(
                        pb.JoinRequest(), metadata=seat_metadata(runner.tokens[0]), timeout=10
                    )
                assert caught.value.code() == grpc.StatusCode.NOT_FOUND
                assert runner.id in (caught.value.details() or "")
        finally:
            await arena.drain(grace=1)
        assert probe.cancelled
        with pytest.raises(Draining):
            arena.runners.create_match(2)

    asyncio.run(go())


def test_a_ladder_seat_keeps_the_ladders_name(tmp_path: Path) -> None:
    async def go() -> None:
        arena, port = await create_server(
            "127.0.0.1:0", db_path=tmp_path / "arena.db", organiser_key="k"
        )
        await arena.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                ladder = arena.runners.create_match(
                    2, names=["ann", "bo"], ladder=True, deadline_ms=10_000, seed=3
                )
                other = arena.runners.create_match(
                    2, names=["ann", "bo"], deadline_ms=10_000, seed=3
                )
                for runner in (ladder, other):
                    await asyncio.gather(
                        *(
                            play(channel, t, random_options(i), name=f"impostor{i}")
                            for i, t in enumerate(runner.tokens)
                        )
                    )
                ladder_result = await asyncio.wait_for(ladder.result(), 10)
                other_result = await asyncio.wait_for(other.result(), 10)
                assert ladder_result.names == ("ann", "bo")
                assert json.loads(ladder_result.record)["meta"]["names"] == ["ann", "bo"]
                assert other_result.names == ("impostor0", "impostor1")
        finally:
            await arena.drain(grace=1)

    asyncio.run(go())


def test_retired_tokens_are_forgotten_after_a_while(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        arena, port = await create_server(
            "127.0.0.1:0", db_path=tmp_path / "arena.db", organiser_key="k", clock=clock
        )
        await arena.start()
        arena.runners.keep_ended = 5.0
        arena.runners.keep_retired = 30.0
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                runner = arena.runners.create_match(2, deadline_ms=10_000, seed=5)
                await asyncio.gather(
                    *(play(channel, t, random_options(i)) for i, t in enumerate(runner.tokens))
                )
                await asyncio.wait_for(runner.result(), 10)
                # Held for keep_ended: its tokens still name a seat, not a retired one.
                assert arena.runners.retired(runner.tokens[0]) is None
                clock.advance(5.0)
                assert arena.runners.retired(runner.tokens[0]) == runner.id
                assert arena.runners.retired(runner.tokens[1]) == runner.id
                clock.advance(29.9)
                assert arena.runners.retired(runner.tokens[1]) == runner.id
                clock.advance(0.1)
                assert arena.runners.retired(runner.tokens[0]) is None
                assert arena.runners.retired(runner.tokens[1]) is None
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await pb_grpc.SeatStub(channel).Join(
                        pb.JoinRequest(), metadata=seat_metadata(runner.tokens[0]), timeout=10
                    )
                assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        finally:
            await arena.drain(grace=1)

    asyncio.run(go())
