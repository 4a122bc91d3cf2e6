"""A client that drops its stream comes back with its token and resumes from the last
sequence number it saw: the snapshot carries the open decision (not sent again) and,
in its history, exactly the log events after that number; the numbers then go on
without a gap, and every stream of the match (each seat's, the spectator's) numbers
the same events alike."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import grpc

from mammamia import loads
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import SeatPlay, create_match, play, random_options, seat_metadata, watch

if TYPE_CHECKING:
    from tests.conftest import RunningServer

TIMEOUT = 30


def _by_sequence(events: list[pb.SeatEvent]) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    for e in events:
        assert e.sequence > 0 and e.sequence not in out, e
        out[e.sequence] = e.SerializeToString()
    return out


async def _observe(channel: grpc.aio.Channel, token: str, after: int) -> list[pb.SeatEvent]:
    """Returns the events of an Observe stream opened on an ended match: its snapshot
    and the end."""
    events: list[pb.SeatEvent] = []
    async for message in pb_grpc.SeatStub(channel).Observe(
        pb.ObserveRequest(after_sequence=after), metadata=seat_metadata(token), timeout=TIMEOUT
    ):
        events.extend(message.events)
    return events


def test_drop_and_resume(server: RunningServer) -> None:
    async def go() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(
                channel,
                server.organiser_key,
                2,
                seed=21,
                time_control=pb.TimeControl(deadline_ms=20_000),
            )
            tokens = created.seat_tokens
            other = asyncio.ensure_future(play(channel, tokens[1], random_options(2)))
            spectator = asyncio.ensure_future(watch(channel, created.match_id))
            choose = random_options(3)
            asked = 0

            def until_third(request: pb.DecisionRequest) -> int | None:
                nonlocal asked
                asked += 1
                return None if asked == 3 else choose(request)

            first = await play(
                channel, tokens[0], until_third, stop=lambda p: len(p.decisions) == 3
            )
            dropped_at = first.last_sequence
            open_decision = first.decisions[-1]
            assert first.events[-1].sequence == 0
            assert first.numbered[-1].sequence == dropped_at
            seen_first = _by_sequence(first.numbered)
            assert sorted(seen_first) == list(range(1, dropped_at + 1))

            # Resuming from an earlier point while the decision is open: the snapshot
            # holds the decision and exactly the events after that point.
            after = max(0, dropped_at - 3)
            peek = pb_grpc.SeatStub(channel).Observe(
                pb.ObserveRequest(after_sequence=after), metadata=seat_metadata(tokens[0])
            )
            message = await asyncio.wait_for(peek.read(), TIMEOUT)
            peek.cancel()
            assert isinstance(message, pb.SeatEvents)
            snapshot = message.events[0]
            assert snapshot.HasField("snapshot") and snapshot.sequence == dropped_at
            snap = snapshot.snapshot
            assert snap.match_id == created.match_id and snap.status == pb.MATCH_STATUS_RUNNING
            assert [e.sequence for e in snap.history] == list(range(after + 1, dropped_at + 1))
            assert [e.SerializeToString() for e in snap.history] == [
                seen_first[s] for s in range(after + 1, dropped_at + 1)
            ]
            assert snap.HasField("decision")
            again = snap.decision
            assert again.decision_id == open_decision.decision_id
            assert again.options == open_decision.options and again.view == open_decision.view
            assert again.deadline == open_decision.deadline
            assert again.default_at == open_decision.default_at
            assert 0 < again.deadline_ms <= open_decision.deadline_ms
            assert again.default_in_ms == again.deadline_ms + again.time_bank_ms
            assert snap.view.seat == 0 and snap.view.to_act == 0
            assert not any(e.HasField("decision") for e in message.events)

            # Answered while no stream is open: the seat's turn is in the log at once,
            # so the resumed stream's history holds it (and whatever followed).
            option = choose(open_decision)
            assert option is not None
            reply = await pb_grpc.SeatStub(channel).Act(
                pb.ActRequest(decision_id=open_decision.decision_id, option=option),
                metadata=seat_metadata(tokens[0]),
                timeout=10,
            )
            assert reply == pb.ActResponse(decision_id=open_decision.decision_id)

            second = await play(channel, tokens[0], choose, after=dropped_at)
            await other
            seen = await spectator
            assert second.ended is not None and second.events[-1].HasField("match_ended")
            resumed = second.events[0]
            assert resumed.HasField("snapshot")
            history = list(resumed.snapshot.history)
            assert history and history[0].turn.seat == 0
            assert [e.sequence for e in history] == list(
                range(dropped_at + 1, resumed.sequence + 1)
            )
            # After the snapshot the numbers go on from its sequence + 1 without a gap.
            live = [e.sequence for e in second.events[1:] if e.sequence]
            total = resumed.sequence + len(live)
            assert live == list(range(resumed.sequence + 1, total + 1))
            # A decision in the snapshot is not sent again; none is sent twice.
            ids = [d.decision_id for d in second.decisions]
            assert len(set(ids)) == len(ids) and open_decision.decision_id not in ids
            if resumed.snapshot.HasField("decision"):
                assert not any(
                    e.HasField("decision") and e.decision.decision_id == ids[0]
                    for e in second.events
                )

            # Nothing lost and nothing changed: the seat's two connections, the other
            # seat, the spectator and a replay after the end number the same events alike.
            mine = seen_first | _by_sequence(second.numbered)
            assert sorted(mine) == list(range(1, total + 1))
            spectator_log = [
                ev
                for e in seen
                for ev in (
                    e.snapshot.history if e.HasField("snapshot") else [e] if e.sequence else []
                )
            ]
            theirs = other.result()
            for log in (_by_sequence(theirs.numbered), _by_sequence(spectator_log)):
                assert log == mine
            replay = SeatPlay(events=await _observe(channel, tokens[0], 0))
            assert [e.WhichOneof("event") for e in replay.events] == ["snapshot", "match_ended"]
            ended = replay.events[0].snapshot
            assert ended.status == pb.MATCH_STATUS_FINISHED and not ended.HasField("decision")
            assert replay.events[0].sequence == total
            assert _by_sequence(replay.numbered) == mine
            assert replay.events[-1].match_ended == second.ended
            # From a later point, only the later events; past the end, none.
            later = await _observe(channel, tokens[0], dropped_at)
            assert [e.sequence for e in later[0].snapshot.history] == list(
                range(dropped_at + 1, total + 1)
            )
            beyond = await _observe(channel, tokens[0], total + 100)
            assert not beyond[0].snapshot.history and beyond[0].sequence == total
            assert beyond[-1].HasField("match_ended")
            record = await pb_grpc.SpectateStub(channel).GetRecord(
                pb.GetRecordRequest(match_id=created.match_id), timeout=10
            )
            assert loads(record.json).meta["timeouts"] == []

    asyncio.run(go())
