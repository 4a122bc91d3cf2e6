"""Deadlines: a seat that does not answer gets the default action, strikes and, after
three in a row, the default policy to the end; the match finishes and the record says
why. A time bank stretches a deadline."""

from __future__ import annotations

import asyncio

import grpc

from mammamia import Resolve, loads
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import create_match, play, random_options, seat_metadata


def test_deadlines_strikes_and_autopilot(server):
    async def go() -> tuple[str, list[str]]:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=11,
                                         time_control=pb.TimeControl(deadline_ms=200))
            stub = pb_grpc.SeatStub(channel)
            meta = seat_metadata(created.seat_tokens[1])
            late: list[str] = []

            async def sleepy() -> None:
                # Answers its first decision too late, then nothing at all.
                async for message in stub.Observe(pb.ObserveRequest(), metadata=meta):
                    for event in message.events:
                        if event.HasField("decision") and not late:
                            await asyncio.sleep(0.4)
                            try:
                                await stub.Act(pb.ActRequest(
                                    decision_id=event.decision.decision_id, option=0),
                                    metadata=meta, timeout=5)
                            except grpc.aio.AioRpcError as e:
                                late.append(f"{e.code().name}: {e.details()}")

            async with asyncio.timeout(60):
                _, p0 = await asyncio.gather(sleepy(), play(channel, created.seat_tokens[0],
                                                            random_options(1)))
            record = await pb_grpc.SpectateStub(channel).GetRecord(
                pb.GetRecordRequest(match_id=created.match_id), timeout=10)
            assert p0.ended is not None and p0.ended.status == pb.MATCH_STATUS_FINISHED
            return record.json, late

    record_json, late = asyncio.run(go())
    assert late and late[0].startswith("FAILED_PRECONDITION") and "deadline" in late[0]
    record = loads(record_json)
    # (Seat 0 may miss a 200 ms deadline itself on a busy machine: seat 1 is the subject.)
    timeouts = [t for t in record.meta["timeouts"] if t["seat"] == 1]
    assert len(timeouts) == 3
    assert all(t["reason"] == "deadline" for t in timeouts)      # connected, but slow
    assert record.meta["strikes"][1] == 3
    [autopilot] = [a for a in record.meta["autopilot"] if a["seat"] == 1]
    assert "3 consecutive" in autopilot["reason"]
    # One scale: both are 0-based indexes into the record's actions.
    assert autopilot["from_action"] == timeouts[-1]["action"]
    assert all(record.actions[t["action"]][0] == 1 for t in timeouts)
    # The defaults are in the record: the first option of a turn, declining a resolution.
    state = record.start()
    for index, (seat, action) in enumerate(record.actions):
        if seat == 1 and (index in {t["action"] for t in timeouts}
                          or index >= autopilot["from_action"]):
            expected = Resolve(False) if state.phase == "resolve" else state.legal_actions()[0]
            assert action == expected, index
        state.apply(action)
    assert state.is_over


def test_time_bank_stretches_the_deadline(server):
    async def go() -> list[pb.DecisionRequest]:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=5,
                                         time_control=pb.TimeControl(deadline_ms=100,
                                                                     time_bank_ms=2000))
            stub = pb_grpc.SeatStub(channel)
            seen: list[pb.DecisionRequest] = []

            async def slow(token: str) -> None:
                meta = seat_metadata(token)
                async for message in stub.Observe(pb.ObserveRequest(), metadata=meta):
                    for event in message.events:
                        if event.HasField("decision"):
                            seen.append(event.decision)
                            if len(seen) <= 2:
                                await asyncio.sleep(0.3)  # past the deadline, within the bank
                            await stub.Act(pb.ActRequest(decision_id=event.decision.decision_id,
                                                         option=0), metadata=meta, timeout=5)

            async with asyncio.timeout(60):
                await asyncio.gather(*(slow(t) for t in created.seat_tokens))
            record = await pb_grpc.SpectateStub(channel).GetRecord(
                pb.GetRecordRequest(match_id=created.match_id), timeout=10)
            assert loads(record.json).meta["timeouts"] == []
            return seen

    seen = asyncio.run(go())
    assert seen[0].time_bank_ms == 2000 and 0 < seen[0].deadline_ms <= 100
    assert seen[0].deadline.seconds > 0
    assert min(d.time_bank_ms for d in seen) < 2000
