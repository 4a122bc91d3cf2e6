"""The one module of the Rules service that builds and reads protobuf messages.

Views, options and events go out with the arena's own encoders (``server.wire``),
so they are byte for byte what a seat's stream carries. A seat's knowledge comes
in as the arena's messages (a View and SeatEvents) and is read back into a
``mammamia.View`` with its public history by the SDK's own reader
(``client_sdk.wire``): what a client holds is read the way a client reads it, by
the one decoder of views and public events (the one import of the SDK in the
server; tests/test_architecture.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from client_sdk import wire as sdk_wire
from mammamia import Event, State, View, view_of
from mammamia.actions import Action
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import rules_pb2 as rpb
from server import wire
from server.events import Happened

from .errors import BadRequest
from .policies import Outcome
from .states import Applied

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
    """Returns (players, seed, colours, first player) of a NewGame; raises BadRequest
    for colours that are not ``players`` distinct colours of the game."""
    try:
        colours = wire.colours_of(msg.colours, msg.players)
    except wire.WireError as e:
        raise BadRequest(str(e)) from None
    return (
        msg.players,
        msg.seed,
        colours or None,
        msg.first_player if msg.HasField("first_player") else None,
    )


def optional_actions(msg: rpb.FromRecordRequest | rpb.RecordKnowledge) -> int | None:
    """Returns how many of a record's actions to replay (None: all)."""
    return msg.actions if msg.HasField("actions") else None


def knowledge_view(msg: rpb.SeatKnowledge) -> View:
    """Returns the seat's View that a SeatKnowledge describes, with its public history;
    raises BadRequest for a spectator's view, an unknown phase or a malformed event."""
    if not msg.view.HasField("seat"):
        raise BadRequest("knowledge.view: a seat's view is needed (seat is not set)")
    # Read as the SDK reads a seat's streams: the same messages, one reader.
    try:
        history = [e for e in map(sdk_wire.event, msg.history) if e is not None]
    except sdk_wire.WireError as e:
        raise BadRequest(f"knowledge.history: {e}") from None
    if msg.view.phase == pb.PHASE_OVER:
        history.append(sdk_wire.game_over_event())
    try:
        return sdk_wire.view(msg.view, history)
    except sdk_wire.WireError as e:
        raise BadRequest(f"knowledge.{e}") from None
