"""The core server's codec: where its values become protobuf messages and back.

Out: views, events, decisions, snapshots and match ends for the streams; replies
of the Seat, Spectate and Organiser calls and their listings. In: answers
(actions), match set-ups. The core's servicers call here for every message they
build or read. The ladder's messages are the ladder's own (``server.ladder.wire``,
which builds on this module; nothing here knows the ladder), and the commands'
requests are on their side (``server.cli_wire``, ``server.ladder.cli_wire``).

Everything a seat or a spectator receives is built here from what
``server.visibility`` hands over (views, public log entries, the viewer's own
decision), never from a ``State``, so nothing R-VIEW hides can reach the wire by
accident.

Stream messages are sent as ready-made bytes (``server._encoding``): a public
log entry is encoded once, as the same bytes for every stream of its match, and
a stream message is the concatenation of its ``events`` entries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from mammamia import COLOURS, INGREDIENTS, Event, Resolve, Turn, View
from mammamia.actions import Action
from mammamia_pb import arena_pb2 as pb

from . import _encoding as enc
from .answers import Refusal, Ruling
from .db.matches import MatchRow
from .events import Decision, Defaulted, Happened, Numbered
from .match import Match
from .quoting import quoted, quoted_list
from .status import MatchStatus
from .visibility import FinalView as FinalItem
from .visibility import Item, Snapshot

DECISION_ID_LIMIT: Final = 64
ORDER_LIMIT: Final = 64
"""The longest order card id an answer may name (ids are a few words long)."""
"""The longest decision id an answer may name (the server's are a few characters)."""


class WireError(ValueError):
    """A message that does not describe a valid value (names the field at fault)."""


PHASES: Final = {"turn": pb.PHASE_TURN, "resolve": pb.PHASE_RESOLVE, "over": pb.PHASE_OVER}
DRAWS: Final = {"supply": pb.DRAW_SOURCE_SUPPLY, "waiter": pb.DRAW_SOURCE_WAITER}
_DRAW_NAMES: Final = {v: k for k, v in DRAWS.items()}
_KINDS: Final = frozenset(INGREDIENTS)
STATUSES: Final[dict[str, pb.MatchStatus.ValueType]] = {
    MatchStatus.WAITING: pb.MATCH_STATUS_WAITING,
    MatchStatus.RUNNING: pb.MATCH_STATUS_RUNNING,
    MatchStatus.ENDING: pb.MATCH_STATUS_RUNNING,
    MatchStatus.FINISHED: pb.MATCH_STATUS_FINISHED,
    MatchStatus.ABORTED: pb.MATCH_STATUS_ABORTED,
}
REFUSALS: Final = {r: pb.Refusal.Value(f"REFUSAL_{r.name}") for r in Refusal}
_REASONS: Final = {"late": pb.DEADLINE_REASON_LATE, "disconnected": pb.DEADLINE_REASON_DISCONNECTED}


# -- values out ------------------------------------------------------------------------


def counts(c: Sequence[int]) -> pb.IngredientCounts:
    """Returns ingredient counts by kind as a message."""
    return pb.IngredientCounts(salami=c[0], pineapple=c[1], mushroom=c[2], pepper=c[3], olive=c[4])


def turn_action(t: Turn) -> pb.TurnAction:
    """Returns a turn as a message."""
    msg = pb.TurnAction()
    if t.ingredient is None:
        setattr(msg, "pass", True)  # `pass` is a Python keyword
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
        msg = (
            pb.Action(turn=turn_action(a))
            if isinstance(a, Turn)
            else pb.Action(resolve=resolve_action(a))
        )
        data = _ACTIONS[a] = msg.SerializeToString()
    return data


def action_message(a: Action) -> pb.Action:
    """Returns an action as a message."""
    msg: pb.Action = pb.Action.FromString(action_bytes(a))
    return msg


def view_bytes(v: View, facts: Sequence[enc.SeatFacts] = ()) -> bytes:
    """Returns a view as an encoded View message; ``facts`` are each seat's (name,
    strikes, autopilot)."""
    return enc.view(v, facts)


def _event_message(e: Event) -> tuple[str, bytes]:
    """Returns (SeatEvent oneof field, encoded message) of a public game event."""
    kind = e.kind
    if kind == "turn":
        assert e.seat is not None
        msg = pb.TurnTaken(
            seat=e.seat,
            action=turn_action(Turn(e.ingredient, e.count, e.order, e.draw)),
            drawn=e.drawn,
            mamma_mia=e.mamma_mia,
        )
        return "turn", msg.SerializeToString()
    if kind == "round_started":
        assert e.seat is not None
        return "round_started", pb.RoundStarted(
            round=e.round, first_seat=e.seat
        ).SerializeToString()
    if kind == "round_ended":
        return "round_ended", pb.RoundEnded(
            round=e.round, stalemate=e.stalemate
        ).SerializeToString()
    if kind in ("baked", "failed"):
        assert e.seat is not None and e.order is not None
        baked = kind == "baked"
        # Decided without asking: a bake the table alone made, or a failure nobody
        # declined (nothing could bake the order, so the owner was not asked).
        res = pb.OrderResolved(
            seat=e.seat,
            order=e.order,
            baked=baked,
            automatic=e.auto if baked else not e.declined,
            declined=e.declined,
        )
        # The engine names the "?"/"J" of every baked Minimale or Monotoni, and no
        # other kind (mammamia.views).
        if baked and e.ingredient is not None:
            res.ingredient = e.ingredient
        if e.hand is not None:
            res.hand.CopyFrom(counts(e.hand))
        return "resolved", res.SerializeToString()
    raise ValueError(f"no wire form for event kind {kind!r}")


def numbered_entry(entry: Numbered) -> bytes:
    """Returns a public log entry as an encoded ``SeatEvents.events`` entry (the same
    bytes for every stream of the match; computed once per entry)."""
    data = entry.encoded
    if data is None:
        if isinstance(entry, Happened):
            payload = _EVENT_PAYLOADS.get(entry.event, _event_payload)
        else:
            payload = enc.payload("deadline_passed", _defaulted(entry))
        data = entry.encoded = enc.events_entry(enc.numbered(entry.sequence, payload))
    return data


def _event_payload(e: Event) -> bytes:
    kind, message = _event_message(e)
    return enc.payload(kind, message)


# ``mammamia.public_events`` hands out the same Event object for the same happening
# ("seat 2 plays 1 olive, draws 1 from the supply"), in every game, so each one's
# encoding is computed once.
_EVENT_PAYLOADS: Final[enc.ByIdentity[Event, bytes]] = enc.ByIdentity(100_000)


def _defaulted(d: Defaulted) -> bytes:
    return pb.DeadlinePassed(
        seat=d.seat,
        decision_id=d.decision_id,
        reason=_REASONS[d.reason],
        strikes=d.strikes,
        autopilot=d.autopilot,
        action=action_message(d.action),
    ).SerializeToString()


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _whole_ms(ns: int) -> int:
    """Returns a span of ``ns`` nanoseconds in whole milliseconds, rounded down (0 when
    negative) once rounded to the microsecond: a time of the clock, a float of UNIX
    seconds, carries a fraction of a microsecond of noise, which must not turn 300 ms
    into 299."""
    return max(0, (ns + 500) // 1000) // 1000


def decision_bytes(d: Decision, match: Match, now: float) -> bytes:
    """Returns an open decision as an encoded DecisionRequest, its times counted
    from ``now``.

    Every time in it comes from the one instant ``now`` and whole numbers: the
    absolute ``deadline`` and ``default_at`` (the deadline plus the bank left at it)
    in nanoseconds, ``deadline_ms`` and ``time_bank_ms`` counted down from them to
    whole milliseconds, and ``default_in_ms`` their sum, exactly, as the contract
    says (so it may fall short of the time to ``default_at`` by up to 2 ms)."""
    if d.encoded_view is None:
        assert d.view is not None, f"decision {d.id} is closed"
        d.encoded_view = enc.view(d.view, d.seats)
    now_ns = _ns(now)
    deadline_ns = _ns(d.deadline)
    default_ns = deadline_ns + _ns(match.time_bank[d.seat])
    deadline_ms = _whole_ms(deadline_ns - now_ns)
    # Past the deadline the bank runs: what is left of it runs to default_at from now.
    bank_ms = _whole_ms(default_ns - max(now_ns, deadline_ns))
    return enc.decision(
        d.id,
        d.resolve,
        d.encoded_view,
        options_field(d.options),
        deadline_ns,
        deadline_ms,
        bank_ms,
        default_ns,
        deadline_ms + bank_ms,
    )


def options_field(legal: tuple[Action, ...]) -> bytes:
    """Returns the encoded repeated ``options`` field of the DecisionRequest that
    asks to choose among ``legal`` (a view's legal actions)."""
    # A repeated field is its entries one after another, so the field is joined from
    # each action's entry, looked up by identity: the engine hands out the same
    # action objects again and again, while the tuple of a hand's turns is mostly
    # made afresh (its blocks concatenated), so caching whole tuples would keep one
    # entry, and a tuple of references, per decision.
    fields = _OPTION_FIELDS
    parts = []
    for a in legal:
        entry = fields.get(id(a))
        if entry is None or entry[0] is not a:
            if len(fields) >= _OPTION_FIELDS_LIMIT:
                fields.clear()
            entry = fields[id(a)] = (a, enc.options_field((action_bytes(a),)))
        parts.append(entry[1])
    return b"".join(parts)


# Each action as one ``options`` entry, by identity; an entry keeps its action alive,
# so no other object can take its id while it is cached. The engine's actions are a
# few thousand; the bound is for actions made elsewhere.
_OPTION_FIELDS: dict[int, tuple[Action, bytes]] = {}
_OPTION_FIELDS_LIMIT: Final = 100_000


def _ended(item: FinalItem, match: Match) -> bytes:
    e = item.ended
    msg = pb.MatchEnded(
        status=STATUSES[e.status], winners=e.winners, delivered=e.delivered, ranks=e.ranks
    )
    fields = pb.MatchEnded.DESCRIPTOR.fields_by_name  # view (5) before reason (6)
    seeds = b""
    fair = match.fairness
    if fair is not None and not fair.sealed:  # a set's seed: once the set ends
        seeds = pb.MatchEnded(
            server_seed=fair.server_seed, client_seeds=fair.client_seeds, game_seed=match.seed
        ).SerializeToString()
    return (
        msg.SerializeToString()
        + enc.length(fields["view"].number, enc.view(item.view, match.seat_facts()))
        + enc.text(fields["reason"].number, e.reason or "")
        + seeds
    )


def stream_entry(item: Item, match: Match, now: float) -> bytes:
    """Returns one item for a stream as a ``SeatEvents.events`` entry."""
    if isinstance(item, Decision):
        event = enc.seat_event(0, "decision", decision_bytes(item, match, now))
    elif isinstance(item, Snapshot):
        return snapshot_entry(item, match, now)
    elif isinstance(item, FinalItem):
        event = enc.seat_event(0, "match_ended", _ended(item, match))
    else:
        return numbered_entry(item)
    return enc.events_entry(event)


def snapshot_entry(snap: Snapshot, match: Match, now: float) -> bytes:
    """Returns the Snapshot that opens a stream as a ``SeatEvents.events`` entry."""
    fields = pb.Snapshot.DESCRIPTOR.fields_by_name
    body = b"".join(
        (
            enc.length(fields["view"].number, enc.view(snap.view, match.seat_facts())),
            enc.text(fields["match_id"].number, match.id),
            b""
            if snap.decision is None
            else enc.length(fields["decision"].number, decision_bytes(snap.decision, match, now)),
            enc.uint(fields["status"].number, STATUSES[snap.status]),
            *(enc.history_entry(numbered_entry(e)) for e in snap.history),
            enc.text(fields["commitment"].number, commitment_of(match)),
        )
    )
    return enc.events_entry(enc.seat_event(snap.sequence, "snapshot", body))


def act_result(decision_id: str, outcome: Ruling, code: int) -> bytes:
    """Returns the reply to an answer on Play as a ``SeatEvents.events`` entry;
    ``code`` is the gRPC status code the unary Act would have returned."""
    msg = pb.ActResult(
        decision_id=decision_id,
        accepted=outcome.accepted,
        code=code,
        message=outcome.message,
        repeated=outcome.repeated,
        rule=outcome.rule or "",
    )
    if outcome.refusal is not None:
        msg.refusal = REFUSALS[outcome.refusal]
    return enc.events_entry(enc.seat_event(0, "act_result", msg.SerializeToString()))


def waiting(place: str) -> bytes:
    """Returns the reply to a PlayMatches ``wait`` (the place's token) as a whole
    ``SeatEvents`` message."""
    return enc.events_entry(
        enc.seat_event(0, "waiting", pb.Waiting(place=place).SerializeToString())
    )


def _raw(message: bytes | Message) -> bytes:
    """Serializes a reply that may already be encoded (the event streams' messages)."""
    return message if isinstance(message, bytes) else message.SerializeToString()


Codec = tuple[Callable[[bytes], Any], Callable[[Any], bytes]]


CODECS: Final[dict[str, dict[str, Codec]]] = {
    "mammamia.v1.Seat": {
        "Join": (pb.JoinRequest.FromString, pb.JoinResponse.SerializeToString),
        "Observe": (pb.ObserveRequest.FromString, _raw),
        "Act": (pb.ActRequest.FromString, pb.ActResponse.SerializeToString),
        "Play": (pb.PlayRequest.FromString, _raw),
        "PlayMatches": (pb.PlayRequest.FromString, _raw),
    },
    "mammamia.v1.Spectate": {
        "Watch": (pb.WatchRequest.FromString, _raw),
        "GetRecord": (pb.GetRecordRequest.FromString, pb.GameRecord.SerializeToString),
    },
}
"""(request parser, reply serializer) of each method registered by hand: the event
streams send ready-made bytes."""


def commitment_of(match: Match) -> str:
    """Returns the match's commitment to its seed ("" when it has none)."""
    return match.fairness.commitment if match.fairness is not None else ""


def join_response(match: Match, seat: int) -> pb.JoinResponse:
    """Returns the reply to Join."""
    return pb.JoinResponse(
        match_id=match.id,
        seat=seat,
        colour=match.state.colours[seat],
        players=match.players,
        deadline_ms=match.settings.deadline_ms,
        commitment=commitment_of(match),
    )


def act_response(decision_id: str, outcome: Ruling) -> pb.ActResponse:
    """Returns the reply to an accepted Act."""
    return pb.ActResponse(decision_id=decision_id, repeated=outcome.repeated)


def game_record(match_id: str, record: str) -> pb.GameRecord:
    """Returns a game record (JSON text) as a message."""
    return pb.GameRecord(match_id=match_id, json=record)


def create_response(match: Match, tokens: Sequence[str]) -> pb.CreateMatchResponse:
    """Returns the reply to CreateMatch."""
    return pb.CreateMatchResponse(
        match_id=match.id, seat_tokens=tokens, commitment=commitment_of(match)
    )


def list_response(rows: Sequence[MatchRow], next_token: str = "") -> pb.ListMatchesResponse:
    """Returns the reply to ListMatches: a page of ``rows``, then the next page's token."""
    return pb.ListMatchesResponse(
        matches=[match_summary(r) for r in rows], next_page_token=next_token
    )


def match_summary(row: MatchRow) -> pb.MatchSummary:
    """Returns a stored match as a listing entry."""
    return pb.MatchSummary(
        match_id=row.id,
        status=STATUSES[row.status],
        players=row.players,
        names=row.names,
        winners=row.winners,
        created=timestamp(row.created),
        ladder=row.ladder,
    )


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
        raise WireError(f"{what}: unknown ingredient {quoted(value)} (R-COMP-1)")
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
                raise WireError(f"turn.draw: {t.draw} is not a draw source (R-TURN-4)")
        if len(t.order) > ORDER_LIMIT:
            raise WireError(
                f"turn.order: at most {ORDER_LIMIT} characters, got {len(t.order)} "
                f"(order ids are those of the view)"
            )
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


def answer_of(msg: pb.ActRequest) -> tuple[str, int | None, Action | None]:
    """Returns (decision id, option index, action) of an answer, exactly one of the last
    two set; raises WireError naming the bad field."""
    if not msg.decision_id:
        raise WireError("decision_id: name the decision you answer")
    if len(msg.decision_id) > DECISION_ID_LIMIT:
        raise WireError(
            f"decision_id: at most {DECISION_ID_LIMIT} characters, got "
            f"{len(msg.decision_id)} (ids are those of DecisionRequest)"
        )
    choice = msg.WhichOneof("choice")
    if choice == "option":
        return msg.decision_id, msg.option, None
    if choice == "action":
        try:
            return msg.decision_id, None, action_of(msg.action)
        except WireError as e:
            raise WireError(f"action: {e}") from None
    raise WireError("set 'option' or 'action' to answer")


@dataclass(frozen=True, slots=True)
class MatchSetup:
    """What an organiser asked for in a CreateMatchRequest (None: the server chooses)."""

    players: int
    seed: int | None
    colours: list[str] | None
    first_player: int | None
    deadline_ms: int  # 0: the server's default
    time_bank_ms: int
    names: list[str]


def colours_of(colours: Sequence[str], players: int) -> list[str]:
    """Returns the colours a request names ([]: the canonical ones); raises WireError
    unless they are none or ``players`` distinct colours of the game (R-SETUP-1)."""
    chosen = list(colours)
    if chosen and (
        len(chosen) != players or len(set(chosen)) != players or not set(COLOURS).issuperset(chosen)
    ):
        raise WireError(
            f"colours must be {players} distinct colours of {list(COLOURS)}, "
            f"got {len(chosen)}: {quoted_list(chosen)} (R-SETUP-1)"
        )
    return chosen


def match_setup(msg: pb.CreateMatchRequest, name_limit: int) -> MatchSetup:
    """Returns the setup a CreateMatchRequest asks for; raises WireError for what is
    refused before the rules see it (player count, names, colours, seed)."""
    if not 2 <= msg.players <= 5:
        raise WireError(f"players must be 2 to 5, got {msg.players} (R-SETUP-1)")
    if len(msg.names) > msg.players:
        raise WireError(f"names: at most one per seat ({msg.players}), got {len(msg.names)}")
    for i, name in enumerate(msg.names):
        if len(name) > name_limit:
            raise WireError(f"names[{i}]: at most {name_limit} characters")
    colours = colours_of(msg.colours, msg.players)
    if msg.HasField("seed") and msg.seed >= 2**63:
        raise WireError(f"seed must be below 2**63, got {msg.seed}")
    return MatchSetup(
        players=msg.players,
        seed=msg.seed if msg.HasField("seed") else None,
        colours=colours or None,
        first_player=msg.first_player if msg.HasField("first_player") else None,
        deadline_ms=msg.time_control.deadline_ms,
        time_bank_ms=msg.time_control.time_bank_ms,
        names=list(msg.names),
    )
