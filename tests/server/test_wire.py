"""The wire module: ready-made event bytes equal what protobuf would encode, and every
legal action survives the trip to a message and back."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mammamia import Resolve, Turn, new_game, public_events, view_of
from mammamia_pb import arena_pb2 as pb
from server import wire


def _games(n: int):
    for seed in range(n):
        state = new_game(2 + seed % 4, seed)
        rng = random.Random(seed)
        yield state
        while not state.is_over:
            state.apply(rng.choice(state.legal_actions()))
            yield state


@pytest.mark.parametrize("sequence", [1, 127, 128, 300, 2**40])
def test_frames_are_protobuf_encodings(sequence):
    body = wire.payload(wire.ROUND_STARTED, pb.RoundStarted(round=2, first_seat=1)
                        .SerializeToString())
    expected = pb.SeatEvent(sequence=sequence,
                            round_started=pb.RoundStarted(round=2, first_seat=1))
    assert wire.frame(sequence, body) == expected.SerializeToString()
    for args in [("d1", 9, "no"), ("d12", 0, ""), ("", 3, "after the first message")]:
        expected = pb.ActResult(decision_id=args[0], accepted=args[1] == 0, code=args[1],
                                message=args[2])
        assert pb.SeatEvent.FromString(wire.act_result(*args)).act_result == expected


def test_joined_entries_are_one_message_of_those_events():
    events = [wire.frame(1, wire.payload(wire.ROUND_STARTED, pb.RoundStarted(round=1)
                                         .SerializeToString())),
              wire.act_result("d1", 0),
              wire.frame(300, wire.match_ended_body("finished", [1], [3, 4], [2, 1]))]
    message = pb.SeatEvents.FromString(b"".join(wire.entry(e) for e in events))
    assert [e.SerializeToString() for e in message.events] == events
    assert [e.sequence for e in message.events] == [1, 0, 300]


def test_actions_round_trip_and_decisions_parse():
    seen = 0
    for state in _games(12):
        if state.is_over:
            continue
        for action in state.legal_actions():
            assert wire.action_of(wire.action_message(action)) == action
            seen += 1
        view = view_of(state, state.to_act)
        body = wire.decision_body("d7", state.phase == "resolve",
                                  wire.view_message(view).SerializeToString(),
                                  wire.options_field(view.legal), 1_700_000_000_250_000_000,
                                  5000, 1500)
        event = pb.SeatEvent.FromString(wire.frame(3, body))
        d = event.decision
        assert (event.sequence, d.decision_id, d.deadline_ms, d.time_bank_ms) == (3, "d7",
                                                                                  5000, 1500)
        assert d.kind == (pb.DECISION_KIND_RESOLVE if state.phase == "resolve"
                          else pb.DECISION_KIND_TURN)
        assert d.view == wire.view_message(view)
        assert d.deadline.seconds == 1_700_000_000 and d.deadline.nanos == 250_000_000
        assert [wire.action_of(o) for o in d.options] == list(view.legal)
        assert d.view.seat == state.to_act and list(d.view.oven) == list(view.oven)
    assert seen > 1000


def test_views_are_encoded_as_their_messages():
    names = ["", "ann", "bob-the-bot", "", "émile"]
    for state in _games(4):
        for seat in (None, *range(state.players)):
            view = view_of(state, seat, history=False)
            assert (wire.view_bytes(view, names[:state.players])
                    == wire.view_message(view, names[:state.players]).SerializeToString())


def test_every_public_event_is_sent_except_the_game_over():
    kinds = set()
    for state in _games(6):
        if state.is_over:
            for e in public_events(state):
                body = wire.event_body(e)
                kinds.add(e.kind)
                if e.kind == "game_over":
                    assert body is None
                else:
                    assert pb.SeatEvent.FromString(wire.frame(1, body)).WhichOneof("event")
    assert {"turn", "round_started", "round_ended", "baked", "failed"} <= kinds


@pytest.mark.parametrize("message, words", [
    (pb.Action(), "set 'turn' or 'resolve'"),
    (pb.Action(turn=pb.TurnAction(ingredient="cheese", count=1)), "R-COMP-1"),
    (pb.Action(turn=pb.TurnAction(count=1)), "R-COMP-1"),
    (pb.Action(turn=pb.TurnAction(**{"pass": True}, ingredient="salami")), "R-TURN-3"),
    (pb.Action(turn=pb.TurnAction(ingredient="olive", count=1, draw=0)), "R-TURN-4"),
    (pb.Action(turn=pb.TurnAction(ingredient="olive", count=1, draw=7)), "R-TURN-4"),
    (pb.Action(resolve=pb.ResolveAction(bake=True, ingredient="ham")), "R-COMP-1"),
    (pb.Action(resolve=pb.ResolveAction(bake=False, ingredient="olive")), "declined"),
])
def test_bad_actions_name_the_fault(message, words):
    with pytest.raises(wire.WireError) as caught:
        wire.action_of(message)
    assert words in str(caught.value)


def test_empty_hands_mean_no_cards():
    msg = pb.Action(resolve=pb.ResolveAction(bake=True, hand=pb.IngredientCounts()))
    assert wire.action_of(msg) == Resolve(True)
    msg = pb.Action(turn=pb.TurnAction(**{"pass": True}))
    assert wire.action_of(msg) == Turn(None)


def test_resolutions_are_automatic_exactly_when_nobody_was_asked():
    # Whether the owner was asked is read from the game itself: the order being
    # decided when a seat answered, not from the event's own flags.
    seen = set()
    for seed in range(40):
        state = new_game(2 + seed % 4, seed)
        rng = random.Random(seed)
        while not state.is_over:
            asked = state.deciding if state.phase == "resolve" else None
            since = len(state.events)
            state.apply(rng.choice(state.legal_actions()))
            for e in public_events(state, since):
                if e.kind not in ("baked", "failed"):
                    continue
                msg = pb.SeatEvent.FromString(wire.frame(1, wire.event_body(e))).resolved
                automatic = e.order != asked
                assert msg.automatic == automatic, (seed, e)
                assert msg.baked == (e.kind == "baked")
                seen.add((e.kind, automatic))
    assert seen == {("baked", True), ("baked", False), ("failed", True), ("failed", False)}


def test_ladder_messages_and_the_replies_the_commands_read():
    from server.ladder.ladder import Assignment
    from server.ladder.store import MatchRow, Standing

    a = Assignment("m1", "tok", 2, 4)
    assert wire.assignment_message(a) == pb.Assignment(match_id="m1", seat_token="tok", seat=2,
                                                       players=4)
    line = Standing(1, "counter-1", 20.5, 27.25, 2.25, 12, 7, 3.5)
    reply = pb.StandingsResponse(matches_finished=12, standings=[wire.standing_message(line)])
    reply = pb.StandingsResponse.FromString(reply.SerializeToString())
    assert wire.standings_data(reply) == {"matches_finished": 12, "standings": [
        {"rank": 1, "name": "counter-1", "rating": 20.5, "mu": 27.25, "sigma": 2.25,
         "games": 12, "wins": 7, "mean_delivered": 3.5}]}
    row = MatchRow("m9", 3, "finished", 1_700_000_000.5, ("a", "b", "c"), (0, 2))
    summary = wire.ladder_summary(row)
    assert summary.status == pb.MATCH_STATUS_FINISHED and summary.ladder
    assert summary.created.ToNanoseconds() == 1_700_000_000_500_000_000
    assert wire.ladder_match_data(summary) == {"match": "m9", "players": 3,
                                               "names": ["a", "b", "c"], "winners": [0, 2]}


def test_create_requests_carry_what_the_organiser_asked_for():
    req = wire.create_request(3, seed=7, deadline_s=0.25, time_bank_s=2, names=["x", "y"])
    setup = wire.match_setup(pb.CreateMatchRequest.FromString(req.SerializeToString()), 64)
    assert setup == wire.MatchSetup(players=3, seed=7, colours=None, first_player=None,
                                    deadline_ms=250, time_bank_ms=2000, names=["x", "y"])
    setup = wire.match_setup(wire.create_request(2), 64)
    assert (setup.seed, setup.deadline_ms, setup.time_bank_ms) == (None, 0, 0)
    # A deadline that would round to no time at all is refused, not stretched to 1 ms.
    with pytest.raises(ValueError, match="deadline"):
        wire.create_request(2, deadline_s=0.0004)


def test_the_commands_requests_come_from_wire():
    assert wire.record_request("m-1") == pb.GetRecordRequest(match_id="m-1")
    assert wire.list_request(7) == pb.ListMatchesRequest(limit=7)
    assert wire.standings_request(3) == pb.StandingsRequest(players=3)
    assert wire.standings_request() == pb.StandingsRequest()
    assert wire.matches_request("ann", 5) == pb.MatchesRequest(name="ann", limit=5)
    # The command modules build no message of their own.
    root = Path(__file__).resolve().parents[2] / "server"
    for path in (root / "cli.py", root / "ladder" / "cli.py"):
        assert "Request(" not in path.read_text(encoding="utf-8"), path


@pytest.mark.parametrize("request_, words", [
    (pb.CreateMatchRequest(players=6), "R-SETUP-1"),
    (pb.CreateMatchRequest(players=2, names=["a", "b", "c"]), "names: at most one per seat"),
    (pb.CreateMatchRequest(players=2, names=["a" * 65]), "names[0]"),
    (pb.CreateMatchRequest(players=2, seed=2**63), "seed"),
])
def test_bad_setups_name_the_field(request_, words):
    with pytest.raises(wire.WireError) as caught:
        wire.match_setup(request_, 64)
    assert words in str(caught.value)


@pytest.mark.parametrize("request_, expected", [
    (pb.ActRequest(decision_id="d3", option=0), ("d3", 0, None)),
    (pb.ActRequest(decision_id="d3", action=pb.Action(resolve=pb.ResolveAction())),
     ("d3", None, Resolve(False))),
    (pb.ActRequest(option=1), "decision_id"),
    (pb.ActRequest(decision_id="d3"), "set 'option' or 'action'"),
    (pb.ActRequest(decision_id="d3", action=pb.Action()), "action: set 'turn'"),
])
def test_answers_are_read_or_refused_by_field(request_, expected):
    if isinstance(expected, tuple):
        assert wire.answer_of(request_) == expected
    else:
        with pytest.raises(wire.WireError) as caught:
            wire.answer_of(request_)
        assert expected in str(caught.value)
