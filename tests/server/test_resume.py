"""A client that drops its stream comes back with its token and resumes from the last
sequence number it saw: the open decision is sent again, no event is lost or changed."""

from __future__ import annotations

import asyncio

import grpc

from mammamia import loads
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import SeatPlay, create_match, play, random_options, seat_metadata


def _numbered(events: list[pb.SeatEvent]) -> dict[int, bytes]:
    return {e.sequence: e.SerializeToString() for e in events
            if e.sequence and not e.HasField("snapshot")}


def test_drop_and_resume(server):
    async def go() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=21,
                                         time_control=pb.TimeControl(deadline_ms=20_000))
            other = asyncio.ensure_future(play(channel, created.seat_tokens[1],
                                               random_options(2)))
            choose = random_options(3)
            asked = 0

            def until_third(request: pb.DecisionRequest) -> int | None:
                nonlocal asked
                asked += 1
                return None if asked == 3 else choose(request)

            first = await play(channel, created.seat_tokens[0], until_third,
                               stop=lambda p: sum(e.HasField("decision") for e in p.events) == 3)
            dropped_at = first.last_sequence
            open_decision = [e for e in first.events if e.HasField("decision")][-1]
            assert open_decision.sequence == dropped_at

            second = await play(channel, created.seat_tokens[0], choose, after=dropped_at)
            await other
            # The snapshot, then the open decision again: same id, same sequence.
            assert second.events[0].HasField("snapshot")
            assert second.events[0].snapshot.match_id == created.match_id
            again = second.events[1]
            assert again.HasField("decision") and again.sequence == dropped_at
            assert again.decision.decision_id == open_decision.decision.decision_id
            assert second.ended is not None

            # Nothing lost: the events of both connections are exactly the seat's log.
            seen = _numbered(first.events) | _numbered(second.events[2:])
            assert sorted(seen) == list(range(1, len(seen) + 1))
            replay = SeatPlay()
            async for message in pb_grpc.SeatStub(channel).Observe(
                    pb.ObserveRequest(), metadata=seat_metadata(created.seat_tokens[0]),
                    timeout=10):
                replay.events.extend(message.events)
            logged = _numbered(replay.events)
            assert sorted(logged) == sorted(seen)
            for seq, data in seen.items():
                if not pb.SeatEvent.FromString(data).HasField("decision"):
                    assert logged[seq] == data, seq
            # From a later point, only the later events follow the snapshot.
            later = [e async for message in pb_grpc.SeatStub(channel).Observe(
                pb.ObserveRequest(after_sequence=dropped_at),
                metadata=seat_metadata(created.seat_tokens[0]), timeout=10)
                for e in message.events]
            assert [e.sequence for e in later[1:]] == list(range(dropped_at + 1,
                                                                 max(seen) + 1))
            record = await pb_grpc.SpectateStub(channel).GetRecord(
                pb.GetRecordRequest(match_id=created.match_id), timeout=10)
            assert loads(record.json).meta["timeouts"] == []

    asyncio.run(go())
