"""The one place where game values become protobuf messages, and answers become actions.

Everything a seat or a spectator receives is built here from a ``mammamia.View``
or from public ``mammamia.Event``s, never from a ``State``, so nothing R-VIEW
hides can reach the wire by accident.

Event streams are sent as ready-made bytes: each event's payload is encoded once
and framed per stream with that stream's sequence number (protobuf encodes a
message as the concatenation of its fields, so ``frame`` gives exactly the bytes
``SeatEvent.SerializeToString`` would). Each framed event is kept as one ``events``
entry of a ``SeatEvents`` message (``entry``); since encoded messages concatenate
into one whose repeated fields hold all their entries, joining entries gives the
message that carries all of those events at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from mammamia import INGREDIENTS, Event, Resolve, Turn, View
from mammamia.actions import Action
from mammamia_pb import arena_pb2 as pb

from .storage import MatchRow


class WireError(ValueError):
    """A message that does not describe a valid value (names the field at fault)."""


PHASES: Final = {"turn": pb.PHASE_TURN, "resolve": pb.PHASE_RESOLVE, "over": pb.PHASE_OVER}
DRAWS: Final = {"supply": pb.DRAW_SOURCE_SUPPLY, "waiter": pb.DRAW_SOURCE_WAITER}
_DRAW_NAMES: Final = {v: k for k, v in DRAWS.items()}
_KINDS: Final = frozenset(INGREDIENTS)
STATUSES: Final = {"waiting": pb.MATCH_STATUS_WAITING, "running": pb.MATCH_STATUS_RUNNING,
                   "finished": pb.MATCH_STATUS_FINISHED, "aborted": pb.MATCH_STATUS_ABORTED}

# SeatEvent field numbers (arena.proto), for framing ready-made payloads.
_SEQUENCE_TAG: Final = b"\x08"
_EVENTS_TAG: Final = b"\x0a"        # SeatEvents.events (1, length-delimited)
SNAPSHOT, DECISION, TURN, ROUND_STARTED, ROUND_ENDED, RESOLVED, MATCH_ENDED, ACT_RESULT = (
    range(2, 10))


# -- framing ---------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _SMALL[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL: Final = tuple(bytes((i,)) for i in range(0x80))


def payload(field: int, message: bytes) -> bytes:
    """Returns a SeatEvent's oneof ``field`` holding ``message`` (encoded), without sequence."""
    return _varint(field << 3 | 2) + _varint(len(message)) + message


def frame(sequence: int, body: bytes) -> bytes:
    """Returns the encoded SeatEvent with ``sequence`` and a ``payload`` body."""
    if sequence == 0:
        return body
    return _SEQUENCE_TAG + _varint(sequence) + body


def entry(event: bytes) -> bytes:
    """Returns an encoded SeatEvent as one ``events`` entry of a SeatEvents message;
    a message is the concatenation of its entries."""
    return _EVENTS_TAG + _varint(len(event)) + event


# -- values out ------------------------------------------------------------------------


def counts(c: Sequence[int]) -> pb.IngredientCounts:
    """Returns ingredient counts by kind as a message."""
    return pb.IngredientCounts(salami=c[0], pineapple=c[1], mushroom=c[2], pepper=c[3],
                               olive=c[4])


def turn_action(t: Turn) -> pb.TurnAction:
    """Returns a turn as a message."""
    msg = pb.TurnAction()
    if t.ingredient is None:
        setattr(msg, "pass", True)   # `pass` is a Python keyword
    else:
        msg.ingredient = t.ingredient
        msg.count = t.count
    if t.order is not None:
        msg.order = t.order
    if t.draw is not None:
        msg.draw = DRAWS[t.draw]
    return msg


def resolve_action(r: Resolve) -> pb.ResolveAction:
    """Returns a resolution decision as a message."""
    msg = pb.ResolveAction(bake=r.bake)
    if r.ingredient is not None:
        msg.ingredient = r.ingredient
    if r.hand is not None:
        msg.hand.CopyFrom(counts(r.hand))
    return msg


_ACTIONS: dict[Action, bytes] = {}


def action_bytes(a: Action) -> bytes:
    """Returns an action's encoded ``Action`` message (cached: actions are few and immutable)."""
    data = _ACTIONS.get(a)
    if data is None:
        msg = pb.Action(turn=turn_action(a)) if isinstance(a, Turn) else \
            pb.Action(resolve=resolve_action(a))
        data = _ACTIONS[a] = msg.SerializeToString()
    return data


def action_message(a: Action) -> pb.Action:
    """Returns an action as a message."""
    msg: pb.Action = pb.Action.FromString(action_bytes(a))
    return msg


def view_message(v: View, names: Sequence[str] = ()) -> pb.View:
    """Returns a view as a message; ``names`` are the seats' display names."""
    msg = pb.View(
        players=v.players, round=v.round, phase=PHASES[v.phase], supply_size=v.supply_size,
        oven=v.oven, revealed=v.revealed, table=counts(v.table), used=v.used,
        hand=counts(v.hand), hand_orders=v.hand_orders, waiter=v.waiter, winners=v.winners)
    if v.seat is not None:
        msg.seat = v.seat
    if v.to_act is not None:
        msg.to_act = v.to_act
    if v.deciding is not None:
        msg.deciding = v.deciding
    if v.mamma_mia_holder is not None:
        msg.mamma_mia_holder = v.mamma_mia_holder
    for s in v.seats:
        msg.seats.add(seat=s.seat, colour=s.colour, hand_size=s.hand_size,
                      orders_in_hand=s.orders_in_hand, waiter_size=s.waiter_size,
                      delivered=s.delivered,
                      name=names[s.seat] if s.seat < len(names) else "")
    return msg


def event_body(e: Event) -> bytes | None:
    """Returns a public event as an encoded SeatEvent body, or None for ``game_over``
    (the end of a match is announced by ``match_ended`` once its record is stored)."""
    kind = e.kind
    if kind == "turn":
        t = Turn(e.ingredient, e.count, e.order, e.draw)
        assert e.seat is not None
        msg = pb.TurnTaken(seat=e.seat, action=turn_action(t), drawn=e.drawn,
                           mamma_mia=e.mamma_mia)
        return payload(TURN, msg.SerializeToString())
    if kind == "round_started":
        assert e.seat is not None
        return payload(ROUND_STARTED, pb.RoundStarted(round=e.round, first_seat=e.seat)
                       .SerializeToString())
    if kind == "round_ended":
        return payload(ROUND_ENDED, pb.RoundEnded(round=e.round, stalemate=e.stalemate)
                       .SerializeToString())
    if kind in ("baked", "failed"):
        assert e.seat is not None and e.order is not None
        res = pb.OrderResolved(seat=e.seat, order=e.order, baked=kind == "baked",
                               automatic=e.auto, declined=e.declined)
        if e.ingredient is not None:
            res.ingredient = e.ingredient
        if e.hand is not None:
            res.hand.CopyFrom(counts(e.hand))
        return payload(RESOLVED, res.SerializeToString())
    if kind == "game_over":
        return None
    raise ValueError(f"unknown event kind {kind!r}")


def decision_body(decision_id: str, resolve: bool, view: bytes, options: bytes,
                  deadline_ns: int, deadline_ms: int, time_bank_ms: int) -> bytes:
    """Returns a DecisionRequest as an encoded SeatEvent body.

    ``view`` is the seat's encoded View, ``options`` its encoded options (from
    ``options_field``); ``deadline_ns`` is a UNIX time in nanoseconds.
    """
    ts = Timestamp()
    ts.FromNanoseconds(deadline_ns)
    head = pb.DecisionRequest(
        decision_id=decision_id,
        kind=pb.DECISION_KIND_RESOLVE if resolve else pb.DECISION_KIND_TURN,
        deadline=ts, deadline_ms=max(0, deadline_ms), time_bank_ms=max(0, time_bank_ms),
    ).SerializeToString()
    # Fields 3 (view) and 4 (options, repeated) appended as encoded bytes.
    return payload(DECISION, b"".join((head, b"\x1a", _varint(len(view)), view, options)))


# A hand's legal turns depend only on its cards and on whether its waiter still has
# orders (R-TURN-1..5), and hands repeat, so encoded turn options are cached by hand.
_TURN_OPTIONS: dict[tuple[object, ...], bytes] = {}
_TURN_OPTIONS_LIMIT: Final = 50_000


def options_field(view: View) -> bytes:
    """Returns the encoded repeated ``options`` field (4) of the DecisionRequest that
    asks ``view``'s seat to choose among ``view.legal``."""
    if view.phase != "turn":
        return _encode_options(view.legal)
    key = (view.hand, view.hand_orders, bool(view.waiter))
    encoded = _TURN_OPTIONS.get(key)
    if encoded is None:
        if len(_TURN_OPTIONS) >= _TURN_OPTIONS_LIMIT:
            _TURN_OPTIONS.clear()
        encoded = _TURN_OPTIONS[key] = _encode_options(view.legal)
    return encoded


_OPTION_FIELDS: dict[Action, bytes] = {}


def _encode_options(options: Sequence[Action]) -> bytes:
    fields = _OPTION_FIELDS
    parts = []
    for a in options:
        field = fields.get(a)
        if field is None:
            data = action_bytes(a)
            field = fields[a] = b"\x22" + _varint(len(data)) + data
        parts.append(field)
    return b"".join(parts)


def snapshot_body(view: pb.View, match_id: str) -> bytes:
    """Returns a Snapshot as an encoded SeatEvent body."""
    return payload(SNAPSHOT, pb.Snapshot(view=view, match_id=match_id).SerializeToString())


def match_ended_body(status: str, winners: Sequence[int], delivered: Sequence[int],
                     ranks: Sequence[int]) -> bytes:
    """Returns a MatchEnded as an encoded SeatEvent body."""
    return payload(MATCH_ENDED, pb.MatchEnded(
        status=STATUSES[status], winners=winners, delivered=delivered, ranks=ranks,
    ).SerializeToString())


def act_result(decision_id: str, code: int, message: str = "") -> bytes:
    """Returns an encoded SeatEvent carrying an ActResult (sequence 0: a reply)."""
    return payload(ACT_RESULT, pb.ActResult(decision_id=decision_id, accepted=code == 0,
                                            code=code, message=message).SerializeToString())


def match_summary(row: MatchRow) -> pb.MatchSummary:
    """Returns a stored match as a listing entry."""
    return pb.MatchSummary(match_id=row.id, status=STATUSES[row.status], players=row.players,
                           names=row.names, winners=row.winners, created=timestamp(row.created),
                           ladder=row.ladder)


def timestamp(iso: str) -> Timestamp:
    """Returns a Timestamp from ISO 8601 text."""
    ts = Timestamp()
    ts.FromJsonString(iso.replace("+00:00", "Z"))
    return ts


# -- values in -------------------------------------------------------------------------


def _ingredient(value: str, what: str, allow_empty: bool = True) -> str | None:
    if value == "" and allow_empty:
        return None
    if value not in _KINDS:
        raise WireError(f"{what}: unknown ingredient {value!r} (R-COMP-1)")
    return value


def action_of(msg: pb.Action) -> Action:
    """Returns the action a message describes; raises WireError naming the bad field."""
    which = msg.WhichOneof("kind")
    if which == "turn":
        t = msg.turn
        is_pass = getattr(t, "pass")
        draw = None
        if t.HasField("draw"):
            draw = _DRAW_NAMES.get(t.draw)
            if draw is None:
                raise WireError(f"turn.draw: {t.draw!r} is not a draw source (R-TURN-4)")
        order = t.order or None
        if is_pass:
            if t.ingredient or t.count:
                raise WireError("turn: a pass names no ingredient and no count (R-TURN-3)")
            return Turn(None, 0, order, draw)
        kind = _ingredient(t.ingredient, "turn.ingredient", allow_empty=False)
        return Turn(kind, t.count, order, draw)
    if which == "resolve":
        r = msg.resolve
        if not r.bake:
            if r.ingredient or (r.HasField("hand") and any(_hand(r.hand))):
                raise WireError("resolve: a declined order names no ingredient and no hand")
            return Resolve(False)
        kind = _ingredient(r.ingredient, "resolve.ingredient")
        hand = _hand(r.hand) if r.HasField("hand") else None
        return Resolve(True, kind, hand if hand and any(hand) else None)
    raise WireError("action: set 'turn' or 'resolve'")


def _hand(h: pb.IngredientCounts) -> tuple[int, int, int, int, int]:
    return (h.salami, h.pineapple, h.mushroom, h.pepper, h.olive)
