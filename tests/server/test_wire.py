"""The wire module: the hand-made encodings (``server._encoding``) equal what the
generated classes serialise for the same values, built here from the contract's
fields, for every entry, decision, snapshot and end of random matches, and for
every viewer; every legal action survives the trip to a message and back."""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator, Sequence

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from mammamia import ORDERS, Action, Resolve, State, Turn, View, new_game, public_events, view_of
from mammamia_pb import arena_pb2 as pb
from server import cli_wire, visibility, wire
from server.answers import ACCEPTED, REPEATED, Refusal, Ruling, refused
from server.events import Decision, Defaulted, Happened, Numbered
from server.ladder import cli_wire as ladder_cli_wire
from server.match import Match, Settings
from server.status import MatchStatus
from server.visibility import FinalView

# -- reference messages, built field by field with the generated classes --------------

PHASES = {"turn": pb.PHASE_TURN, "resolve": pb.PHASE_RESOLVE, "over": pb.PHASE_OVER}
DRAWS = {"supply": pb.DRAW_SOURCE_SUPPLY, "waiter": pb.DRAW_SOURCE_WAITER}
STATUSES = {
    "waiting": pb.MATCH_STATUS_WAITING,
    "running": pb.MATCH_STATUS_RUNNING,
    "ending": pb.MATCH_STATUS_RUNNING,
    "finished": pb.MATCH_STATUS_FINISHED,
    "aborted": pb.MATCH_STATUS_ABORTED,
}


def ref_counts(c: Sequence[int]) -> pb.IngredientCounts:
    return pb.IngredientCounts(salami=c[0], pineapple=c[1], mushroom=c[2], pepper=c[3], olive=c[4])


def ref_turn(t: Turn) -> pb.TurnAction:
    msg = pb.TurnAction(
        ingredient=t.ingredient or "", count=t.count if t.ingredient else 0, order=t.order or ""
    )
    setattr(msg, "pass", t.ingredient is None)
    if t.draw is not None:
        msg.draw = DRAWS[t.draw]
    return msg


def ref_action(a: Action) -> pb.Action:
    if isinstance(a, Turn):
        return pb.Action(turn=ref_turn(a))
    msg = pb.Action(resolve=pb.ResolveAction(bake=a.bake, ingredient=a.ingredient or ""))
    if a.hand is not None:
        msg.resolve.hand.CopyFrom(ref_counts(a.hand))
    return msg


def ref_view(v: View, facts: Sequence[tuple[str, int, bool]] = ()) -> pb.View:
    msg = pb.View(
        players=v.players,
        round=v.round,
        phase=PHASES[v.phase],
        deciding=v.deciding or "",
        supply_size=v.supply_size,
        oven=v.oven,
        revealed=v.revealed,
        table=ref_counts(v.table),
        used=v.used,
        hand=ref_counts(v.hand),
        hand_orders=v.hand_orders,
        waiter=v.waiter,
        winners=v.winners,
    )
    if v.seat is not None:
        msg.seat = v.seat
    if v.to_act is not None:
        msg.to_act = v.to_act
    if v.mamma_mia_holder is not None:
        msg.mamma_mia_holder = v.mamma_mia_holder
    for s in v.seats:
        name, strikes, autopilot = facts[s.seat] if s.seat < len(facts) else ("", 0, False)
        msg.seats.add(
            seat=s.seat,
            colour=s.colour,
            hand_size=s.hand_size,
            orders_in_hand=s.orders_in_hand,
            waiter_size=s.waiter_size,
            delivered=s.delivered,
            name=name,
            strikes=strikes,
            autopilot=autopilot,
        )
    return msg


def ref_event(entry: Numbered) -> pb.SeatEvent:
    """Returns a numbered log entry as the contract describes it."""
    out = pb.SeatEvent(sequence=entry.sequence)
    if isinstance(entry, Defaulted):
        out.deadline_passed.CopyFrom(
            pb.DeadlinePassed(
                seat=entry.seat,
                decision_id=entry.decision_id,
                reason={
                    "late": pb.DEADLINE_REASON_LATE,
                    "disconnected": pb.DEADLINE_REASON_DISCONNECTED,
                }[entry.reason],
                strikes=entry.strikes,
                autopilot=entry.autopilot,
                action=ref_action(entry.action),
            )
        )
        return out
    e = entry.event
    if e.kind == "turn":
        assert e.seat is not None
        out.turn.CopyFrom(
            pb.TurnTaken(
                seat=e.seat,
                action=ref_turn(Turn(e.ingredient, e.count, e.order, e.draw)),
                drawn=e.drawn,
                mamma_mia=e.mamma_mia,
            )
        )
    elif e.kind == "round_started":
        assert e.seat is not None
        out.round_started.CopyFrom(pb.RoundStarted(round=e.round, first_seat=e.seat))
    elif e.kind == "round_ended":
        out.round_ended.CopyFrom(pb.RoundEnded(round=e.round, stalemate=e.stalemate))
    else:
        assert e.seat is not None and e.order is not None
        baked = e.kind == "baked"
        chosen = baked and ORDERS[e.order].kind in ("minimale", "monotoni")
        out.resolved.CopyFrom(
            pb.OrderResolved(
                seat=e.seat,
                order=e.order,
                baked=baked,
                ingredient=(e.ingredient or "") if chosen else "",
                automatic=e.auto if baked else not e.declined,
                declined=e.declined,
            )
        )
        if e.hand is not None:
            out.resolved.hand.CopyFrom(ref_counts(e.hand))
    return out


def whole_ms(ns: int) -> int:
    """A span of nanoseconds in whole milliseconds, once rounded to the microsecond."""
    return max(0, (ns + 500) // 1_000) // 1_000


def ref_decision(d: Decision, match: Match, now: float) -> pb.DecisionRequest:
    assert d.view is not None  # an open decision keeps its view
    now_ns, deadline_ns = round(now * 1e9), round(d.deadline * 1e9)
    default_ns = deadline_ns + round(match.time_bank[d.seat] * 1e9)
    deadline_ms = whole_ms(deadline_ns - now_ns)
    bank_ms = whole_ms(default_ns - max(now_ns, deadline_ns))
    deadline, default_at = Timestamp(), Timestamp()
    deadline.FromNanoseconds(deadline_ns)
    default_at.FromNanoseconds(default_ns)
    return pb.DecisionRequest(
        decision_id=d.id,
        kind=pb.DECISION_KIND_RESOLVE if d.resolve else pb.DECISION_KIND_TURN,
        view=ref_view(d.view, d.seats),
        options=[ref_action(a) for a in d.options],
        deadline=deadline,
        deadline_ms=deadline_ms,
        time_bank_ms=bank_ms,
        default_at=default_at,
        default_in_ms=deadline_ms + bank_ms,
    )


def ref_item(item: visibility.Item, match: Match, viewer: int | None, now: float) -> pb.SeatEvent:
    if isinstance(item, visibility.Snapshot):
        return ref_snapshot(item, match, now)
    if isinstance(item, Decision):
        return pb.SeatEvent(decision=ref_decision(item, match, now))
    if isinstance(item, FinalView):
        e = item.ended
        return pb.SeatEvent(
            match_ended=pb.MatchEnded(
                status=STATUSES[e.status],
                winners=e.winners,
                delivered=e.delivered,
                ranks=e.ranks,
                view=ref_view(view_of(match.state, viewer, history=False), match.seat_facts()),
                reason=e.reason or "",
            )
        )
    return ref_event(item)


def ref_snapshot(snap: visibility.Snapshot, match: Match, now: float) -> pb.SeatEvent:
    msg = pb.Snapshot(
        view=ref_view(snap.view, match.seat_facts()),
        match_id=match.id,
        status=STATUSES[snap.status],
        history=[ref_event(e) for e in snap.history],
    )
    if snap.decision is not None:
        msg.decision.CopyFrom(ref_decision(snap.decision, match, now))
    return pb.SeatEvent(sequence=snap.sequence, snapshot=msg)


def passed(ingredient: str = "") -> pb.TurnAction:
    """Returns a TurnAction with ``pass`` set (a Python keyword, so set by name)."""
    msg = pb.TurnAction(ingredient=ingredient)
    setattr(msg, "pass", True)
    return msg


def one(event: pb.SeatEvent) -> bytes:
    """Returns the bytes of a SeatEvents message holding just ``event``."""
    return pb.SeatEvents(events=[event]).SerializeToString()


# -- matches played on the state machine alone ----------------------------------------


def _games(n: int) -> Iterator[State]:
    for seed in range(n):
        state = new_game(2 + seed % 4, seed)
        rng = random.Random(seed)
        yield state
        while not state.is_over:
            state.apply(rng.choice(state.legal_actions()))
            yield state


def _check_everything(match: Match, now: float, rng: random.Random, seen: set[str]) -> None:
    """Checks every viewer's item for the newest log entries, and a snapshot each."""
    viewers = (None, *range(match.players))
    for viewer in viewers:
        after = rng.randrange(len(match.numbered) + 2)
        snap = visibility.snapshot(match, viewer, after)
        assert wire.snapshot_entry(snap, match, now) == one(ref_snapshot(snap, match, now))
        seen.add("snapshot")
        if snap.decision is not None:
            seen.add("snapshot_decision")


def _play(seed: int, players: int, time_bank_ms: int) -> set[str]:
    rng = random.Random(seed)
    now = 1_700_000_000.125 + seed
    match = Match(
        f"m-{seed}",
        new_game(players, seed),
        seed,
        Settings(
            deadline_ms=1000,
            time_bank_ms=time_bank_ms,
            names=["ann", "", "émile", "bo", "cy"][:players],
        ),
        now,
    )
    for seat in range(players):
        match.join(seat)
    match.start(now)
    seen: set[str] = set()
    checked = 0
    while True:
        for entry in match.log[checked:]:
            for viewer in (None, *range(players)):
                item = visibility.item(match, entry, viewer)
                if item is None:
                    continue
                assert wire.stream_entry(item, match, now) == one(
                    ref_item(item, match, viewer, now)
                ), (entry, viewer)
                seen.add(type(item).__name__)
        checked = len(match.log)
        if rng.random() < 0.1:
            _check_everything(match, now, rng, seen)
        if match.status == MatchStatus.ENDING:
            match.finish(match.result(stored=rng.random() < 0.9))
            continue
        if match.ended is not None:
            break
        d = match.decision
        assert d is not None
        if rng.random() < 0.08:
            now = match.default_at(d) + 0.001  # nobody answers
            match.tick(now, absent=[d.seat] if rng.random() < 0.5 else [])
        else:
            now += rng.random() * 1.5  # late, now and then
            outcome = match.answer(d.seat, d.id, rng.randrange(len(d.options)), None, now)
            assert outcome == ACCEPTED
    _check_everything(match, now, rng, seen)
    return seen


@pytest.mark.parametrize("seed", range(8))
def test_stream_entries_are_what_the_generated_classes_serialise(seed: int) -> None:
    seen = _play(seed, 2 + seed % 4, time_bank_ms=(seed % 2) * 1500)
    assert {"Happened", "Decision", "FinalView", "snapshot", "snapshot_decision"} <= seen


def test_defaults_and_autopilot_are_encoded_too() -> None:
    seen = set()
    for seed in range(8, 20):
        seen |= _play(seed, 2 + seed % 4, time_bank_ms=0)
    assert "Defaulted" in seen


@pytest.mark.parametrize(
    "outcome, code",
    [
        (ACCEPTED, 0),
        (REPEATED, 0),
        (refused(Refusal.ILLEGAL, "no", "R-TURN-1"), 3),
        (refused(Refusal.OTHER_SEAT, "not yours"), 7),
        (refused(Refusal.MALFORMED, "after the first message"), 3),
    ],
)
def test_act_results_are_their_messages(outcome: Ruling, code: int) -> None:
    expected = pb.ActResult(
        decision_id="d12",
        accepted=outcome.accepted,
        code=code,
        message=outcome.message,
        rule=outcome.rule or "",
        repeated=outcome.repeated,
    )
    if outcome.refusal is not None:
        expected.refusal = pb.Refusal.Value(f"REFUSAL_{outcome.refusal.name}")
        assert expected.message.startswith(f"REFUSAL_{outcome.refusal.name}: ")
    assert wire.act_result("d12", outcome, code) == one(pb.SeatEvent(act_result=expected))


def test_joined_entries_are_one_message_of_those_events() -> None:
    state = new_game(2, 1)
    events = [e for e in public_events(state) if e.kind != "game_over"][:1]
    first = Happened(1, events[0])
    match = Match("m1", state, 1, Settings(), 0.0)
    entries = [
        wire.stream_entry(first, match, 0.0),
        wire.act_result("d1", ACCEPTED, 0),
        wire.stream_entry(Happened(2**40, events[0]), match, 0.0),
    ]
    message = pb.SeatEvents.FromString(b"".join(entries))
    assert [e.sequence for e in message.events] == [1, 0, 2**40]
    assert message.events[0] == ref_event(first)
    # A public entry is encoded once, as the same bytes for every stream.
    assert wire.numbered_entry(first) is wire.numbered_entry(first)


def test_actions_round_trip() -> None:
    seen = 0
    for state in _games(12):
        if state.is_over:
            continue
        for action in state.legal_actions():
            assert wire.action_message(action) == ref_action(action)
            assert wire.action_of(wire.action_message(action)) == action
            assert wire.action_of(ref_action(action)) == action
            seen += 1
    assert seen > 1000


def test_views_are_encoded_as_their_messages() -> None:
    facts = [
        ("", 0, False),
        ("ann", 1, False),
        ("bob-the-bot", 3, True),
        ("", 2, False),
        ("émile", 0, True),
    ]
    for state in _games(4):
        for seat in (None, *range(state.players)):
            view = view_of(state, seat, history=False)
            assert (
                wire.view_bytes(view, facts[: state.players])
                == ref_view(view, facts[: state.players]).SerializeToString()
            )
            assert wire.view_bytes(view) == ref_view(view).SerializeToString()


def test_every_public_event_is_sent_except_the_game_over() -> None:
    kinds = set()
    for state in _games(6):
        if state.is_over:
            for i, e in enumerate(public_events(state)):
                kinds.add(e.kind)
                if e.kind == "game_over":
                    with pytest.raises(ValueError):
                        wire.numbered_entry(Happened(i + 1, e))
                    continue
                entry = Happened(i + 1, e)
                expected = pb.SeatEvents(events=[ref_event(entry)]).SerializeToString()
                assert wire.numbered_entry(entry) == expected
    assert {"turn", "round_started", "round_ended", "baked", "failed"} <= kinds


@pytest.mark.parametrize(
    "message, words",
    [
        (pb.Action(), "set 'turn' or 'resolve'"),
        (pb.Action(turn=pb.TurnAction(ingredient="cheese", count=1)), "R-COMP-1"),
        (pb.Action(turn=pb.TurnAction(count=1)), "R-COMP-1"),
        (pb.Action(turn=passed("salami")), "R-TURN-3"),
        (
            pb.Action(
                turn=pb.TurnAction(ingredient="olive", count=1, draw=pb.DrawSource.ValueType(0))
            ),
            "R-TURN-4",
        ),
        (
            pb.Action(
                turn=pb.TurnAction(ingredient="olive", count=1, draw=pb.DrawSource.ValueType(7))
            ),
            "R-TURN-4",
        ),
        (pb.Action(resolve=pb.ResolveAction(bake=True, ingredient="ham")), "R-COMP-1"),
        (pb.Action(resolve=pb.ResolveAction(bake=False, ingredient="olive")), "declined"),
    ],
)
def test_bad_actions_name_the_fault(message: pb.Action, words: str) -> None:
    with pytest.raises(wire.WireError) as caught:
        wire.action_of(message)
    assert words in str(caught.value)


def test_empty_hands_mean_no_cards() -> None:
    msg = pb.Action(resolve=pb.ResolveAction(bake=True, hand=pb.IngredientCounts()))
    assert wire.action_of(msg) == Resolve(True)
    msg = pb.Action(turn=passed())
    assert wire.action_of(msg) == Turn(None)


def test_resolutions_are_automatic_exactly_when_nobody_was_asked() -> None:
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
                encoded = wire.numbered_entry(Happened(1, e))
                msg = pb.SeatEvents.FromString(encoded).events[0].resolved
                automatic = e.order != asked
                assert msg.automatic == automatic, (seed, e)
                assert msg.baked == (e.kind == "baked")
                seen.add((e.kind, automatic))
    assert seen == {("baked", True), ("baked", False), ("failed", True), ("failed", False)}


def test_create_requests_carry_what_the_organiser_asked_for() -> None:
    req = cli_wire.create_request(3, seed=7, deadline_s=0.25, time_bank_s=2, names=["x", "y"])
    setup = wire.match_setup(pb.CreateMatchRequest.FromString(req.SerializeToString()), 64)
    assert setup == wire.MatchSetup(
        players=3,
        seed=7,
        colours=None,
        first_player=None,
        deadline_ms=250,
        time_bank_ms=2000,
        names=["x", "y"],
    )
    setup = wire.match_setup(cli_wire.create_request(2), 64)
    assert (setup.seed, setup.deadline_ms, setup.time_bank_ms) == (None, 0, 0)
    # A deadline that would round to no time at all is refused, not stretched to 1 ms.
    with pytest.raises(ValueError, match="deadline"):
        cli_wire.create_request(2, deadline_s=0.0004)


def test_the_commands_requests_are_their_messages() -> None:
    assert cli_wire.record_request("m-1") == pb.GetRecordRequest(match_id="m-1")
    assert cli_wire.list_request(7) == pb.ListMatchesRequest(page_size=7)
    assert cli_wire.list_request(7, "t") == pb.ListMatchesRequest(page_size=7, page_token="t")
    assert ladder_cli_wire.standings_request(3) == pb.StandingsRequest(players=3)
    assert ladder_cli_wire.standings_request() == pb.StandingsRequest()
    assert ladder_cli_wire.matches_request("ann", 5) == pb.MatchesRequest(name="ann", page_size=5)
    assert ladder_cli_wire.standings_request(0, "t") == pb.StandingsRequest(page_token="t")
    assert ladder_cli_wire.results_request(9, "t") == pb.ResultsRequest(page_size=9, page_token="t")


@pytest.mark.parametrize(
    "request_, words",
    [
        (pb.CreateMatchRequest(players=6), "R-SETUP-1"),
        (pb.CreateMatchRequest(players=2, names=["a", "b", "c"]), "names: at most one per seat"),
        (pb.CreateMatchRequest(players=2, names=["a" * 65]), "names[0]"),
        (pb.CreateMatchRequest(players=2, seed=2**63), "seed"),
    ],
)
def test_bad_setups_name_the_field(request_: pb.CreateMatchRequest, words: str) -> None:
    with pytest.raises(wire.WireError) as caught:
        wire.match_setup(request_, 64)
    assert words in str(caught.value)


@pytest.mark.parametrize(
    "request_, expected",
    [
        (pb.ActRequest(decision_id="d3", option=0), ("d3", 0, None)),
        (
            pb.ActRequest(decision_id="d3", action=pb.Action(resolve=pb.ResolveAction())),
            ("d3", None, Resolve(False)),
        ),
        (pb.ActRequest(option=1), "decision_id"),
        (pb.ActRequest(decision_id="d3"), "set 'option' or 'action'"),
        (pb.ActRequest(decision_id="d3", action=pb.Action()), "action: set 'turn'"),
    ],
)
def test_answers_are_read_or_refused_by_field(
    request_: pb.ActRequest, expected: tuple[str, int | None, Action | None] | str
) -> None:
    if isinstance(expected, tuple):
        assert wire.answer_of(request_) == expected
    else:
        with pytest.raises(wire.WireError) as caught:
            wire.answer_of(request_)
        assert expected in str(caught.value)


def test_options_are_encoded_from_one_kept_entry_per_action_not_per_decision() -> None:
    # The engine makes a hand's tuple of turns afresh at most decisions: what is kept
    # to encode options grows with the actions offered, not with the decisions.
    before = len(wire._OPTION_FIELDS)
    offered: dict[int, object] = {}
    decisions = 0
    for seed in range(30):
        state = new_game(4, seed)
        choose = random.Random(seed).choice
        while state.to_act is not None:
            legal = state.legal_actions()
            expected = pb.DecisionRequest(options=[wire.action_message(a) for a in legal])
            references = sys.getrefcount(legal)
            assert wire.options_field(legal) == expected.SerializeToString()
            assert sys.getrefcount(legal) == references  # the tuple is not kept
            offered.update((id(a), a) for a in legal)
            decisions += 1
            state.apply(choose(legal))
    assert len(wire._OPTION_FIELDS) - before <= len(offered) < decisions / 2
