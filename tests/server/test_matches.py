"""Full matches on a real server: every seat played by a client that knows only the
options the server sends, for 2 to 5 players, by the Play stream and by Observe + Act;
every stream numbers the same log events alike and ends with `match_ended`, which
carries the viewer's own final view; ranks share places and skip the ones after
(1, 1, 3); the stored record replays to the same winners."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest

from mammamia import Resolve, loads
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import MAMMAMIA, create_match, observe_and_act, play, random_options, watch

if TYPE_CHECKING:
    pass
    from tests.conftest import RunningServer


async def _full_match(
    address: str, key: str, players: int, seed: int
) -> tuple[pb.CreateMatchResponse, list[Any], list[pb.SeatEvent], str]:
    async with grpc.aio.insecure_channel(address) as channel:
        created = await create_match(
            channel, key, players, seed=seed, names=[f"bot{i}" for i in range(players)]
        )
        seats = [
            # The last seat plays with Observe + Act, the others on the Play stream.
            observe_and_act(channel, token, random_options(seed + i))
            if i == players - 1
            else play(channel, token, random_options(seed + i), name=f"bot{i}")
            for i, token in enumerate(created.seat_tokens)
        ]
        spectator = asyncio.ensure_future(watch(channel, created.match_id))
        plays = await asyncio.gather(*seats)
        seen = await spectator
        record = await pb_grpc.SpectateStub(channel).GetRecord(
            pb.GetRecordRequest(match_id=created.match_id), timeout=10
        )
    return created, plays, seen, record.json


def _expected_ranks(view: pb.View, delivered: list[int]) -> list[int]:
    """Returns the ranks R-END-2 gives: most pizzas, then most ingredient cards in hand
    (public: hand size less orders); equal results share a rank, the next are skipped."""
    scores = [(delivered[s.seat], s.hand_size - s.orders_in_hand) for s in view.seats]
    return [1 + sum(other > mine for other in scores) for mine in scores]


# Seeds whose games (with these choosers) end in ties: 3 players 1, 1, 3; 4 players
# 1, 3, 4, 1; 3 players at 103 would be 2, 1, 2.
@pytest.mark.parametrize(
    "players, seed, ranks",
    [(2, 102, [1, 2]), (3, 203, [3, 1, 1]), (4, 242, [1, 3, 4, 1]), (5, 105, [5, 4, 2, 1, 3])],
)
def test_full_match(
    server: RunningServer, tmp_path: Path, players: int, seed: int, ranks: list[int]
) -> None:
    created, plays, seen, record_json = asyncio.run(
        _full_match(server.address, server.organiser_key, players, seed=seed)
    )

    # Every stream ends with match_ended, once; the same end for every viewer but the
    # view, which is each viewer's own final view.
    for events in [p.events for p in plays] + [seen]:
        assert events[-1].HasField("match_ended") and events[-1].sequence == 0
        assert sum(e.HasField("match_ended") for e in events) == 1
    ends = [p.ended for p in plays]
    spectator_end = seen[-1].match_ended
    assert all(e is not None and e.status == pb.MATCH_STATUS_FINISHED for e in ends)

    def without_view(e: pb.MatchEnded) -> bytes:
        copy = pb.MatchEnded()
        copy.CopyFrom(e)
        copy.ClearField("view")
        return copy.SerializeToString()

    assert len({without_view(e) for e in [*ends, spectator_end]}) == 1
    end = ends[0]
    assert end.reason == ""
    assert list(end.ranks) == ranks
    assert list(end.winners) == [i for i, r in enumerate(ranks) if r == 1]
    for seat, e in enumerate(ends):
        assert e.view.HasField("seat") and e.view.seat == seat
    assert not spectator_end.view.HasField("seat")
    assert spectator_end.view.hand == pb.IngredientCounts()
    assert not spectator_end.view.hand_orders and not spectator_end.view.waiter
    for e in [*ends, spectator_end]:
        v = e.view
        assert v.phase == pb.PHASE_OVER and not v.HasField("to_act")
        assert not v.oven and v.revealed == 0 and v.players == players
        assert list(v.winners) == list(end.winners)
        assert [len(s.delivered) for s in v.seats] == list(end.delivered)
        assert [s.name for s in v.seats] == [f"bot{i}" for i in range(players)]
        assert all(s.strikes == 0 and not s.autopilot for s in v.seats)
        assert _expected_ranks(v, list(end.delivered)) == list(end.ranks)
    # A seat's final view shows its own hand, and its hand size is the public one.
    for seat, e in enumerate(ends):
        h = e.view.hand
        own = h.salami + h.pineapple + h.mushroom + h.pepper + h.olive
        info = e.view.seats[seat]
        assert own == info.hand_size - info.orders_in_hand
        assert list(e.view.hand_orders) == sorted(e.view.hand_orders)
        assert len(e.view.hand_orders) == info.orders_in_hand

    # The log: numbered 1, 2, 3, ... without a gap on every stream, the snapshot's
    # history included; the same event has the same number (and bytes) everywhere.
    spectator = [
        ev
        for e in seen
        for ev in (e.snapshot.history if e.HasField("snapshot") else [e] if e.sequence else [])
    ]
    logs = [[e.sequence for e in p.numbered] for p in plays] + [[e.sequence for e in spectator]]
    total = len(spectator)
    assert all(log == list(range(1, total + 1)) for log in logs), logs
    reference = [e.SerializeToString() for e in spectator]
    for p in plays:
        assert [e.SerializeToString() for e in p.numbered] == reference
        snapshot = p.events[0]
        assert snapshot.HasField("snapshot") and snapshot.snapshot.match_id == created.match_id
        assert snapshot.sequence == len(snapshot.snapshot.history)
        # After the snapshot, numbered events go on from its sequence + 1; decision
        # requests, act results and the end carry 0.
        live = [e.sequence for e in p.events[1:] if e.sequence]
        assert live == list(range(snapshot.sequence + 1, total + 1))
        assert all(
            e.sequence == 0
            for e in p.events[1:]
            if e.WhichOneof("event") in ("decision", "act_result", "match_ended", "snapshot")
        )

    # Every decision asked (by the snapshot or as an event) was answered, and accepted.
    for p in plays:
        ids = [d.decision_id for d in p.decisions]
        assert ids and ids == p.answered and len(set(ids)) == len(ids)
        assert len(p.results) + len(p.responses) == len(p.answered)
        assert all(
            r.accepted
            and not r.repeated
            and r.code == 0
            and not r.message
            and r.refusal == pb.REFUSAL_UNSPECIFIED
            for r in p.results
        )
        assert [r.decision_id for r in p.results + p.responses] == p.answered
        assert not any(r.repeated for r in p.responses)
        # One message per decision: a request ends its message, a reply begins one.
        for message in p.messages:
            kinds = [e.WhichOneof("event") for e in message.events]
            assert "decision" not in kinds[:-1] and "act_result" not in kinds[1:], kinds
    assert seen[0].HasField("snapshot") and not seen[0].snapshot.HasField("decision")
    assert not any(e.HasField("decision") for e in seen)

    # The stored record replays, with `mammamia state`, to the same winners.
    record = loads(record_json)
    assert record.meta["match"] == created.match_id
    assert record.meta["names"] == [f"bot{i}" for i in range(players)]
    assert record.meta["timeouts"] == []
    path = tmp_path / "record.json"
    path.write_text(record_json)
    done = subprocess.run(
        [str(MAMMAMIA), "state", str(path)], capture_output=True, text=True, timeout=60, check=True
    )
    dump = json.loads(done.stdout)
    assert dump["phase"] == "over"
    assert dump["winners"] == list(end.winners)
    assert len(record.actions) == sum(len(p.answered) for p in plays)
    # Every resolution decision in the record was asked as one.
    asked = sum(d.kind == pb.DECISION_KIND_RESOLVE for p in plays for d in p.decisions)
    assert asked == sum(isinstance(a, Resolve) for _, a in record.actions)
