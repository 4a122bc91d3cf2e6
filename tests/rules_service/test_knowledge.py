"""A seat's knowledge read back by the Rules service: what its encoders send (a view
and the numbered public log, as a seat's streams carry them) reads back as the view
the rules give that seat, through the one reader of views and public events
(``client_sdk.wire``); a malformed event is refused naming the field."""

from __future__ import annotations

import dataclasses
import random

import pytest

from mammamia import new_game, view_of
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import rules_pb2 as rpb
from server.rules_service import wire
from server.rules_service.errors import BadRequest


@pytest.mark.parametrize("players", [2, 3, 5])
def test_knowledge_reads_back_as_the_seats_view(players: int) -> None:
    rng = random.Random(players)
    state = new_game(players, players * 11)
    steps = 0
    while True:
        for seat in range(players):
            sent = wire.view_response(state, seat, history=True)
            known = rpb.SeatKnowledge(view=sent.view, history=sent.history)
            expected = dataclasses.replace(view_of(state, seat), legal=())
            assert wire.knowledge_view(known) == expected, (players, steps, seat)
        if state.is_over:
            break
        state.apply(rng.choice(state.legal_actions()))
        steps += 1
    assert steps > 20


def test_a_malformed_event_or_view_is_refused_by_field() -> None:
    state = new_game(2, 3)
    sent = wire.view_response(state, 0, history=True)
    bad_draw = pb.SeatEvent(
        turn=pb.TurnTaken(seat=0, action=pb.TurnAction(draw=pb.DrawSource.ValueType(99)))
    )
    with pytest.raises(BadRequest, match=r"knowledge\.history: turn\.draw"):
        wire.knowledge_view(rpb.SeatKnowledge(view=sent.view, history=[bad_draw]))
    view = pb.View()
    view.CopyFrom(sent.view)
    view.phase = pb.PHASE_UNSPECIFIED
    with pytest.raises(BadRequest, match=r"knowledge\.view\.phase"):
        wire.knowledge_view(rpb.SeatKnowledge(view=view))
    spectator = wire.view_response(state, None, history=False)
    with pytest.raises(BadRequest, match="a seat's view is needed"):
        wire.knowledge_view(rpb.SeatKnowledge(view=spectator.view))
