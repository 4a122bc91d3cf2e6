"""Stopping and crashing: SIGTERM drains (health NOT_SERVING, no new matches, running
matches aborted after the grace period with their records); a match cut off by a crash
is marked aborted when the server starts again, and the server serves on."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import time
from typing import TYPE_CHECKING, Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mammamia import loads
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import SeatPlay, create_match, play, random_options, seat_metadata

if TYPE_CHECKING:
    from tests.conftest import RunningServer
from collections.abc import Callable
from pathlib import Path


def _rows(db_path: Path) -> dict[str, sqlite3.Row]:
    with sqlite3.connect(db_path) as db:
        db.row_factory = sqlite3.Row
        return {r["id"]: r for r in db.execute("SELECT * FROM matches")}


async def _started_match(
    channel: grpc.aio.Channel, key: str
) -> tuple[pb.CreateMatchResponse, list[grpc.aio.UnaryStreamCall[Any, pb.SeatEvents]]]:
    """Returns a running 2-player match whose seats observe and never answer."""
    created = await create_match(
        channel, key, 2, seed=9, time_control=pb.TimeControl(deadline_ms=60_000)
    )
    stub = pb_grpc.SeatStub(channel)
    calls = [
        stub.Observe(pb.ObserveRequest(), metadata=seat_metadata(t)) for t in created.seat_tokens
    ]
    for call in calls:
        await call.read()  # the snapshot: the seat has joined
    organiser = pb_grpc.OrganiserStub(channel)
    async with asyncio.timeout(10):
        while (
            await organiser.ListMatches(
                pb.ListMatchesRequest(limit=1), timeout=5, metadata=(("organiser-key", key),)
            )
        ).matches[0].status != pb.MATCH_STATUS_RUNNING:
            await asyncio.sleep(0.01)
    return created, calls


def test_sigterm_drains(start_server: Callable[..., RunningServer]) -> None:
    server = start_server(drain_seconds=2)

    async def go() -> tuple[str, pb.MatchEnded, str]:
        async with grpc.aio.insecure_channel(server.address) as channel:
            finished = await create_match(channel, server.organiser_key, 2, seed=4)
            await asyncio.gather(
                *(play(channel, t, random_options(i)) for i, t in enumerate(finished.seat_tokens))
            )
            running, calls = await _started_match(channel, server.organiser_key)
            assert server.process is not None
            server.process.send_signal(signal.SIGTERM)
            health = health_pb2_grpc.HealthStub(channel)
            async with asyncio.timeout(10):
                while (
                    await health.Check(  # type: ignore[attr-defined]
                        health_pb2.HealthCheckRequest(), timeout=5
                    )
                ).status != health_pb2.HealthCheckResponse.NOT_SERVING:
                    await asyncio.sleep(0.02)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await create_match(channel, server.organiser_key, 2)
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
            ended = None
            async with asyncio.timeout(20):
                while (message := await calls[0].read()) is not grpc.aio.EOF:
                    assert isinstance(message, pb.SeatEvents)
                    for event in message.events:
                        if event.HasField("match_ended"):
                            ended = event.match_ended
            assert ended is not None
            return running.match_id, ended, finished.match_id

    running_id, ended, finished_id = asyncio.run(go())
    assert server.process is not None
    assert server.process.wait(timeout=30) == 0
    assert ended.status == pb.MATCH_STATUS_ABORTED and not ended.winners
    # The end says why, and shows the seat's view where the game was cut off.
    assert "shut down" in ended.reason and len(ended.ranks) == 2 and len(ended.delivered) == 2
    assert ended.view.seat == 0 and ended.view.phase == pb.PHASE_TURN
    assert not ended.view.winners
    rows = _rows(server.db_path)
    assert rows[finished_id]["status"] == "finished"
    assert rows[running_id]["status"] == "aborted"
    assert "shut down" in rows[running_id]["reason"]
    record = loads(rows[running_id]["record"])
    assert record.meta["aborted"] == rows[running_id]["reason"]
    record.replay()  # a partial record, still valid
    logs = [json.loads(line) for line in server.logs().splitlines() if line.startswith("{")]
    assert {"drain_started", "drain_done"} <= {e["event"] for e in logs}


def test_crash_then_restart_resumes_the_cut_off_match(
    start_server: Callable[..., RunningServer],
) -> None:
    server = start_server(drain_seconds=1)

    async def start() -> str:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created, calls = await _started_match(channel, server.organiser_key)
            for c in calls:
                c.cancel()
            return created.match_id

    match_id = asyncio.run(start())
    assert _rows(server.db_path)[match_id]["status"] == "running"
    server.kill()
    server.restart()

    async def after() -> pb.ListMatchesResponse:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=1)
            await asyncio.gather(
                *(play(channel, t, random_options(i)) for i, t in enumerate(created.seat_tokens))
            )
            return await pb_grpc.OrganiserStub(channel).ListMatches(
                pb.ListMatchesRequest(),
                metadata=(("organiser-key", server.organiser_key),),
                timeout=10,
            )

    listed = asyncio.run(after())
    statuses = {m.match_id: m.status for m in listed.matches}
    # The cut-off match goes on where it was (server.db.journal); its seats may come back.
    assert statuses[match_id] == pb.MATCH_STATUS_RUNNING
    assert sorted(statuses.values()) == [pb.MATCH_STATUS_RUNNING, pb.MATCH_STATUS_FINISHED]
    assert "match_resumed" in server.logs()
    assert server.stop() == 0


def test_match_waits_for_its_seats_then_starts_anyway(
    start_server: Callable[..., RunningServer],
) -> None:
    server = start_server(start_timeout=0.5, deadline_ms=50)

    async def go() -> tuple[SeatPlay, str]:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 3, seed=2)
            listed = await pb_grpc.OrganiserStub(channel).ListMatches(
                pb.ListMatchesRequest(),
                metadata=(("organiser-key", server.organiser_key),),
                timeout=10,
            )
            assert listed.matches[0].status == pb.MATCH_STATUS_WAITING
            # Only seat 0 comes; the others are played by the default policy.
            result = await play(channel, created.seat_tokens[0], random_options(0))
            record = await pb_grpc.SpectateStub(channel).GetRecord(
                pb.GetRecordRequest(match_id=created.match_id), timeout=10
            )
            return result, record.json

    started = time.monotonic()
    seat0, record_json = asyncio.run(go())
    ended = seat0.ended
    assert ended is not None and ended.status == pb.MATCH_STATUS_FINISHED
    # Every stream hears of the defaults: numbered, with the seat, the reason, the
    # strikes in a row and the autopilot the third one starts.
    passed = [e.deadline_passed for e in seat0.numbered if e.HasField("deadline_passed")]
    for seat in (1, 2):
        theirs = [p for p in passed if p.seat == seat]
        assert [(p.strikes, p.autopilot) for p in theirs] == [(1, False), (2, False), (3, True)]
        assert all(p.reason == pb.DEADLINE_REASON_DISCONNECTED and p.decision_id for p in theirs)
        info = ended.view.seats[seat]
        assert (info.strikes, info.autopilot) == (3, True)
    assert time.monotonic() - started < 60
    meta = loads(record_json).meta
    # (Seat 0 may miss a 50 ms deadline itself on a busy machine: only 1 and 2 are known.)
    absent = [t for t in meta["timeouts"] if t["seat"] != 0]
    assert len(absent) == 6 and all(t["reason"] == "disconnected" for t in absent)
    assert meta["strikes"][1:] == [3, 3]
    assert {1, 2} <= {a["seat"] for a in meta["autopilot"]}
