"""A stream message carries several events: the SDK reads them all, in order, and
does not answer a decision that the rest of its message shows was already closed."""

from __future__ import annotations

from client_sdk import wire
from mammamia_pb import arena_pb2 as pb


def _turn(sequence: int, seat: int) -> pb.SeatEvent:
    return pb.SeatEvent(sequence=sequence, turn=pb.TurnTaken(
        seat=seat, action=pb.TurnAction(ingredient="salami", count=1,
                                        draw=pb.DRAW_SOURCE_SUPPLY), drawn=1))


def _decision(sequence: int, decision_id: str) -> pb.SeatEvent:
    option = pb.Action(turn=pb.TurnAction(ingredient="salami", count=1,
                                          draw=pb.DRAW_SOURCE_SUPPLY))
    return pb.SeatEvent(sequence=sequence, decision=pb.DecisionRequest(
        decision_id=decision_id, kind=pb.DECISION_KIND_TURN,
        view=pb.View(seat=0, players=2, round=1, phase=pb.PHASE_TURN, to_act=0),
        options=[option], deadline_ms=5000))


def _reply(decision_id: str) -> pb.SeatEvent:
    return pb.SeatEvent(act_result=pb.ActResult(decision_id=decision_id, accepted=True))


def test_every_event_of_a_message_in_order() -> None:
    message = pb.SeatEvents(events=[_reply("d1"), _turn(4, 0), _turn(5, 1), _decision(6, "d3")])
    items = wire.incomings(message)
    assert [type(i).__name__ for i in items] == ["Replied", "Happened", "Happened", "Asked"]
    assert [i.sequence for i in items[1:]] == [4, 5, 6]
    assert isinstance(items[3], wire.Asked) and items[3].decision_id == "d3"


def test_a_decision_closed_within_its_message_is_not_asked() -> None:
    message = pb.SeatEvents(events=[_decision(2, "d1"), _turn(3, 0), _decision(4, "d2"),
                                    _reply("d2")])
    items = wire.incomings(message)
    asked = [i.decision_id for i in items if isinstance(i, wire.Asked)]
    assert asked == ["d2"]          # d1 was decided at its deadline; d2 is open
    assert [type(i).__name__ for i in items] == ["Happened", "Asked", "Replied"]
