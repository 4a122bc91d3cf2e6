"""A stream message carries several events: the SDK reads them all, in order; a
snapshot brings the events missed and the open decision."""

from __future__ import annotations

from client_sdk import wire
from mammamia_pb import arena_pb2 as pb


def _turn(sequence: int, seat: int) -> pb.SeatEvent:
    return pb.SeatEvent(
        sequence=sequence,
        turn=pb.TurnTaken(
            seat=seat,
            action=pb.TurnAction(ingredient="salami", count=1, draw=pb.DRAW_SOURCE_SUPPLY),
            drawn=1,
        ),
    )


def _request(decision_id: str) -> pb.DecisionRequest:
    option = pb.Action(turn=pb.TurnAction(ingredient="salami", count=1, draw=pb.DRAW_SOURCE_SUPPLY))
    return pb.DecisionRequest(
        decision_id=decision_id,
        kind=pb.DECISION_KIND_TURN,
        view=pb.View(seat=0, players=2, round=1, phase=pb.PHASE_TURN, to_act=0),
        options=[option],
        deadline_ms=5000,
        default_in_ms=5000,
    )


def _reply(decision_id: str) -> pb.SeatEvent:
    return pb.SeatEvent(act_result=pb.ActResult(decision_id=decision_id, accepted=True))


def test_every_event_of_a_message_in_order() -> None:
    message = pb.SeatEvents(
        events=[_reply("d1"), _turn(4, 0), _turn(5, 1), pb.SeatEvent(decision=_request("d3"))]
    )
    items = wire.incomings(message)
    assert [type(i).__name__ for i in items] == ["Replied", "Happened", "Happened", "Asked"]
    assert [i.sequence for i in items[1:3] if isinstance(i, wire.Happened)] == [4, 5]
    assert isinstance(items[3], wire.Asked) and items[3].decision_id == "d3"
    assert items[3].default_in_ms == 5000


def test_a_snapshot_carries_the_missed_events_and_the_open_decision() -> None:
    snapshot = pb.Snapshot(
        match_id="m-1",
        view=pb.View(seat=0, players=2, round=1, phase=pb.PHASE_TURN, to_act=0),
        decision=_request("d2"),
        status=pb.MATCH_STATUS_RUNNING,
        history=[_turn(3, 0), _turn(4, 1)],
    )
    (item,) = wire.incomings(pb.SeatEvents(events=[pb.SeatEvent(sequence=4, snapshot=snapshot)]))
    assert isinstance(item, wire.Snapshot)
    assert (item.sequence, item.status) == (4, "running")
    assert [h.sequence for h in item.history] == [3, 4]
    assert item.asked is not None and item.asked.decision_id == "d2"


def test_a_refusal_says_whether_the_decision_is_still_open() -> None:
    def refusal(kind: pb.Refusal.ValueType) -> wire.Replied:
        (item,) = wire.incomings(
            pb.SeatEvents(
                events=[
                    pb.SeatEvent(act_result=pb.ActResult(decision_id="d1", code=9, refusal=kind))
                ]
            )
        )
        assert isinstance(item, wire.Replied)
        return item

    assert refusal(pb.REFUSAL_ILLEGAL).still_open
    assert not refusal(pb.REFUSAL_ALREADY_ANSWERED).still_open
    assert refusal(pb.REFUSAL_DEFAULTED).refusal == "REFUSAL_DEFAULTED"
