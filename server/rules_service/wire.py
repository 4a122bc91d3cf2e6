"""The one module of the Rules service that builds and reads protobuf messages.

Views, options and events go out with the arena's own encoders (``server.wire``),
so they are byte for byte what a seat's stream carries. A seat's knowledge comes
in as the arena's messages (a View and SeatEvents) and is read back into a
``mammamia.View`` with its public history, as the SDK reads its streams.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from mammamia import INGREDIENTS, Event, SeatInfo, State, Turn, View, view_of
from mammamia.actions import Action, Counts
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import rules_pb2 as rpb
from server import wire
from server.events import Happened

from .errors import BadRequest
from .policies import Outcome
from .states import Applied

_PHASES: Final = {v: k for k, v in wire.PHASES.items()}
_DRAWS: Final = {pb.DRAW_SOURCE_SUPPLY: "supply", pb.DRAW_SOURCE_WAITER: "waiter"}
_KINDS: Final = {"turn": pb.DECISION_KIND_TURN, "resolve": pb.DECISION_KIND_RESOLVE}


# -- out ---------------------------------------------------------------------------------


def game_state(handle: int, state: State) -> rpb.GameState:
    """Returns what a reply says of a state under ``handle``."""
    msg = rpb.GameState(
        handle=handle, phase=wire.PHASES[state.phase], players=state.players, round=state.round
    )
    if state.to_act is not None:
        msg.to_act = state.to_act
    return msg


def state_reply(handle: int, state: State) -> rpb.StateReply:
    """Returns the reply of a call that made one state."""
    return rpb.StateReply(state=game_state(handle, state))


def determinize_response(made: Iterable[tuple[int, State]]) -> rpb.DeterminizeResponse:
    """Returns the reply listing the sampled states."""
    return rpb.DeterminizeResponse(states=[game_state(h, s) for h, s in made])


def legal_response(state: State, legal: Sequence[Action]) -> rpb.LegalResponse:
    """Returns a state's legal options (the arena's Action messages, canonical order)."""
    msg = rpb.LegalResponse(options=[wire.action_message(a) for a in legal])
    if state.to_act is not None:
        msg.to_act = state.to_act
        msg.kind = _KINDS[state.phase]
    return msg


def _events(events: Sequence[Event], first_sequence: int) -> list[pb.SeatEvent]:
    """Returns public events as the SeatEvent messages a seat's stream carries,
    numbered from ``first_sequence``."""
    entries = b"".join(
        wire.numbered_entry(Happened(first_sequence + i, e))
        for i, e in enumerate(events)
        if e.kind != "game_over"
    )
    return list(pb.SeatEvents.FromString(entries).events)


def apply_response(applied: Applied) -> rpb.ApplyResponse:
    """Returns the reply to Apply: the state and the events the action caused."""
    return rpb.ApplyResponse(
        state=game_state(applied.handle, applied.state),
        events=_events(applied.events, applied.first_sequence),
    )


def view_response(state: State, seat: int | None, history: bool) -> rpb.GetViewResponse:
    """Returns a seat's (or the spectator's) view of a state, with the public log when
    ``history``; raises BadRequest for a seat out of range."""
    if seat is not None and not 0 <= seat < state.players:
        raise BadRequest(f"seat: 0 to {state.players - 1}, got {seat}")
    view = view_of(state, seat, history=history)
    msg = rpb.GetViewResponse(view=pb.View.FromString(wire.view_bytes(view)))
    if history:
        msg.history.extend(_events(view.history, 1))
    return msg


def playout_response(outcome: Outcome) -> rpb.PlayoutResponse:
    """Returns the result of a playout."""
    state = outcome.state
    scores = state.scores()
    return rpb.PlayoutResponse(
        delivered=[d for d, _ in scores],
        ingredients=[i for _, i in scores],
        ranks=state.ranking(),
        winners=state.winners(),
        decisions=outcome.decisions,
    )


def release_response(released: int, held: int) -> rpb.ReleaseResponse:
    """Returns the reply to Release."""
    return rpb.ReleaseResponse(released=released, held=held)


# -- in ----------------------------------------------------------------------------------


def action(msg: pb.Action, what: str = "action") -> Action:
    """Returns the action a message describes; raises BadRequest naming the field."""
    try:
        return wire.action_of(msg)
    except wire.WireError as e:
        raise BadRequest(f"{what}: {e}") from None


def apply_choice(msg: rpb.ApplyRequest) -> tuple[int | None, Action | None]:
    """Returns (option index, action) of an Apply, one of them set; raises BadRequest."""
    which = msg.WhichOneof("choice")
    if which == "option":
        return msg.option, None
    if which == "action":
        return None, action(msg.action)
    raise BadRequest("set 'option' or 'action'")


def playout_first(msg: rpb.PlayoutRequest) -> tuple[int | None, Action | None]:
    """Returns (option index, action) of a playout's first action, or (None, None)."""
    which = msg.WhichOneof("first")
    if which == "first_option":
        return msg.first_option, None
    if which == "first_action":
        return None, action(msg.first_action, "first_action")
    return None, None


def new_game_args(msg: rpb.NewGameRequest) -> tuple[int, int, list[str] | None, int | None]:
    """Returns (players, seed, colours, first player) of a NewGame."""
    return (
        msg.players,
        msg.seed,
        list(msg.colours) or None,
        msg.first_player if msg.HasField("first_player") else None,
    )


def optional_actions(msg: rpb.FromRecordRequest | rpb.RecordKnowledge) -> int | None:
    """Returns how many of a record's actions to replay (None: all)."""
    return msg.actions if msg.HasField("actions") else None


def counts(c: pb.IngredientCounts) -> Counts:
    """Returns ingredient counts by kind from a message."""
    return (int(c.salami), int(c.pineapple), int(c.mushroom), int(c.pepper), int(c.olive))


def _turn(t: pb.TurnAction) -> Turn:
    draw = None
    if t.HasField("draw"):
        draw = _DRAWS.get(t.draw)
        if draw is None:
            raise BadRequest(f"history: turn.draw {t.draw} is not a draw source")
    if getattr(t, "pass"):  # `pass` is a Python keyword
        return Turn(None, 0, t.order or None, draw)
    if t.ingredient not in INGREDIENTS:
        raise BadRequest(f"history: unknown ingredient {t.ingredient!r}")
    return Turn(t.ingredient, int(t.count), t.order or None, draw)


def _event(msg: pb.SeatEvent) -> Event | None:
    """Returns the public game event a SeatEvent holds (None for the other kinds)."""
    which = msg.WhichOneof("event")
    if which == "turn":
        t = msg.turn
        a = _turn(t.action)
        return Event(
            "turn",
            int(t.seat),
            ingredient=a.ingredient,
            count=a.count,
            order=a.order,
            draw=a.draw,
            drawn=int(t.drawn),
            mamma_mia=t.mamma_mia,
        )
    if which == "round_started":
        r = msg.round_started
        return Event("round_started", int(r.first_seat), round=int(r.round))
    if which == "round_ended":
        return Event(
            "round_ended", round=int(msg.round_ended.round), stalemate=msg.round_ended.stalemate
        )
    if which == "resolved":
        res = msg.resolved
        if res.baked:
            hand = counts(res.hand)
            return Event(
                "baked",
                int(res.seat),
                order=res.order,
                ingredient=res.ingredient or None,
                hand=hand if any(hand) else None,
                auto=res.automatic,
            )
        return Event("failed", int(res.seat), order=res.order, declined=res.declined)
    return None


def knowledge_view(msg: rpb.SeatKnowledge) -> View:
    """Returns the seat's View that a SeatKnowledge describes, with its public history;
    raises BadRequest for a spectator's view or an unknown phase."""
    v = msg.view
    if not v.HasField("seat"):
        raise BadRequest("knowledge.view: a seat's view is needed (seat is not set)")
    phase = _PHASES.get(v.phase)
    if phase is None:
        raise BadRequest(f"knowledge.view.phase: {v.phase} is not a phase")
    history = tuple(e for e in map(_event, msg.history) if e is not None)
    if phase == "over":
        history += (Event("game_over"),)
    seats = tuple(
        SeatInfo(
            int(s.seat),
            s.colour,
            int(s.hand_size),
            int(s.orders_in_hand),
            int(s.waiter_size),
            tuple(s.delivered),
        )
        for s in v.seats
    )
    return View(
        seat=int(v.seat),
        players=int(v.players),
        colours=tuple(s.colour for s in seats),
        round=int(v.round),
        phase=phase,
        to_act=int(v.to_act) if v.HasField("to_act") else None,
        deciding=v.deciding or None,
        supply_size=int(v.supply_size),
        oven=tuple(v.oven),
        revealed=int(v.revealed),
        table=counts(v.table),
        used=tuple(v.used),
        mamma_mia_holder=int(v.mamma_mia_holder) if v.HasField("mamma_mia_holder") else None,
        seats=seats,
        hand=counts(v.hand),
        hand_orders=tuple(v.hand_orders),
        waiter=tuple(v.waiter),
        history=history,
        legal=(),
        winners=tuple(v.winners),
    )
