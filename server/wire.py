"""The one place on the server side where values become protobuf messages and back.

Out: views, events, decisions and match ends for the streams; listings, ladder
assignments and standings for the unary calls. In: answers (actions), match
set-ups. And the requests and replies of the ``mammamia match`` and ``mammamia
ladder`` commands. Servicers and commands build and read plain messages (ids,
names, a record's text) themselves and call here for everything else.

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from google.protobuf.json_format import MessageToDict
from google.protobuf.timestamp_pb2 import Timestamp

from mammamia import INGREDIENTS, Event, Resolve, SeatInfo, Turn, View
from mammamia.actions import Action
from mammamia_pb import arena_pb2 as pb

from .storage import MatchRow

if TYPE_CHECKING:
    from .ladder.ladder import Assignment
    from .ladder.store import MatchRow as LadderMatchRow
    from .ladder.store import Standing


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


def _uint(field: int, value: int) -> bytes:
    """Returns a varint field, or nothing for 0 (proto3 leaves zero scalars out)."""
    return _VARINT_TAGS[field] + _varint(value) if value else b""


def _bytes(field: int, data: bytes) -> bytes:
    """Returns a length-delimited field (a string, bytes or an embedded message)."""
    return _LENGTH_TAGS[field] + _varint(len(data)) + data


# Field tags (field number and wire type) of the fields encoded here (1 to 17).
_VARINT_TAGS: Final = tuple(_varint(f << 3) for f in range(18))
_LENGTH_TAGS: Final = tuple(_varint(f << 3 | 2) for f in range(18))


K = TypeVar("K")
V = TypeVar("V")


class _ByIdentity(Generic[K, V]):
    """A bounded cache of what is computed from immutable objects the engine hands out
    again and again as the same object (legal-action tuples, public events), keyed by
    identity: a lookup costs no hashing of the object. Each entry keeps its object
    alive, so no other object can take its id while it is cached."""

    __slots__ = ("_entries", "_limit")

    def __init__(self, limit: int) -> None:
        self._entries: dict[int, tuple[K, V]] = {}
        self._limit = limit

    def get(self, key: K, compute: Callable[[K], V]) -> V:
        """Returns the value cached for ``key`` (this very object), computing it once."""
        entry = self._entries.get(id(key))
        if entry is not None and entry[0] is key:
            return entry[1]
        value = compute(key)
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[id(key)] = (key, value)
        return value


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


def view_bytes(v: View, names: Sequence[str] = ()) -> bytes:
    """Returns a view as an encoded View message (the bytes of ``view_message(v, names)``
    serialized), built from cached pieces: the card ids, ingredient counts and seat
    facts of one decision are mostly those of the last."""
    parts = [
        b"" if v.seat is None else _SEAT_TAG + _varint(v.seat),
        _uint(2, v.players), _uint(3, v.round), _uint(4, PHASES[v.phase]),
        b"" if v.to_act is None else _TO_ACT_TAG + _varint(v.to_act),
        _DECIDING[v.deciding] if v.deciding else b"",
        _uint(7, v.supply_size),
        b"".join(map(_OVEN.__getitem__, v.oven)),
        _uint(9, v.revealed),
        _TABLE[v.table],
        b"".join(map(_USED.__getitem__, v.used)),
        b"" if v.mamma_mia_holder is None else _HOLDER_TAG + _varint(v.mamma_mia_holder),
        *[_seat(info, names[info.seat] if info.seat < len(names) else "")
          for info in v.seats],
        _HAND[v.hand],
        b"".join(map(_HAND_ORDERS.__getitem__, v.hand_orders)),
        b"".join(map(_WAITER.__getitem__, v.waiter)),
    ]
    if v.winners:
        parts.append(_bytes(17, b"".join(_varint(w) for w in v.winners)))   # packed
    return b"".join(parts)


_SEAT_TAG, _TO_ACT_TAG, _HOLDER_TAG = _VARINT_TAGS[1], _VARINT_TAGS[5], _VARINT_TAGS[12]


class _Encoded(dict[Any, bytes]):
    """The encodings of one field's values, each computed on first use: the values of
    the fields cached this way (card ids, colours, ingredient counts) are few."""

    def __init__(self, encode: Callable[[Any], bytes]) -> None:
        super().__init__()
        self._encode = encode

    def __missing__(self, value: Any) -> bytes:
        data = self[value] = self._encode(value)
        return data


def _strings(field: int) -> _Encoded:
    return _Encoded(lambda text: _bytes(field, text.encode()))


def _ingredient_counts(field: int) -> _Encoded:
    # An IngredientCounts field is present even when all counts are 0.
    return _Encoded(lambda c: _bytes(field, b"".join(
        _uint(kind, n) for kind, n in enumerate(c, start=1))))


_DECIDING, _OVEN, _USED, _HAND_ORDERS, _WAITER = (_strings(f) for f in (6, 8, 11, 15, 16))
_TABLE, _HAND = _ingredient_counts(10), _ingredient_counts(14)
_COLOUR, _DELIVERED = _strings(2), _strings(6)      # SeatInfo fields

_SEATS: dict[tuple[SeatInfo, str], bytes] = {}
_SEATS_LIMIT: Final = 100_000


def _seat(info: SeatInfo, name: str) -> bytes:
    """Returns a View's ``seats`` entry (field 13) for one seat's public facts."""
    key = (info, name)
    data = _SEATS.get(key)
    if data is None:
        if len(_SEATS) >= _SEATS_LIMIT:
            _SEATS.clear()
        data = _SEATS[key] = _bytes(13, b"".join((
            _uint(1, info.seat), _COLOUR[info.colour], _uint(3, info.hand_size),
            _uint(4, info.orders_in_hand), _uint(5, info.waiter_size),
            b"".join(map(_DELIVERED.__getitem__, info.delivered)),
            _bytes(7, name.encode()) if name else b"")))
    return data


def event_body(e: Event) -> bytes | None:
    """Returns a public event as an encoded SeatEvent body, or None for ``game_over``
    (the end of a match is announced by ``match_ended`` once its record is stored)."""
    return _EVENT_BODIES.get(e, _event_body)


# ``mammamia.public_events`` hands out the same Event object for the same happening.
_EVENT_BODIES: Final[_ByIdentity[Event, bytes | None]] = _ByIdentity(100_000)


def _event_body(e: Event) -> bytes | None:
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
        baked = kind == "baked"
        # Decided without asking: a bake the table alone made, or a failure nobody
        # declined (nothing could bake the order, so the owner was not asked).
        res = pb.OrderResolved(seat=e.seat, order=e.order, baked=baked,
                               automatic=e.auto if baked else not e.declined,
                               declined=e.declined)
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
    seconds, nanos = divmod(deadline_ns, 1_000_000_000)
    deadline = _uint(1, seconds) + _uint(2, nanos)          # google.protobuf.Timestamp
    return payload(DECISION, b"".join((
        _bytes(1, decision_id.encode()),
        _RESOLVE_KIND if resolve else _TURN_KIND,
        _bytes(3, view),
        options,                                            # 4, repeated, encoded
        _bytes(5, deadline),
        _uint(6, max(0, deadline_ms)),
        _uint(7, max(0, time_bank_ms)))))


_TURN_KIND: Final = _uint(2, pb.DECISION_KIND_TURN)
_RESOLVE_KIND: Final = _uint(2, pb.DECISION_KIND_RESOLVE)


def options_field(legal: tuple[Action, ...]) -> bytes:
    """Returns the encoded repeated ``options`` field (4) of the DecisionRequest that
    asks to choose among ``legal`` (a view's legal actions)."""
    return _OPTIONS.get(legal, _encode_options)


# The engine interns the legal turns of a hand (R-TURN-1..5: they depend only on the
# hand and on whether its waiter still has orders), and hands repeat, so each tuple
# is encoded once.
_OPTIONS: Final[_ByIdentity[tuple[Action, ...], bytes]] = _ByIdentity(50_000)


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


def snapshot_body(view: bytes, match_id: str) -> bytes:
    """Returns a Snapshot of an encoded View (``view_bytes``) as an encoded SeatEvent body."""
    return payload(SNAPSHOT, _bytes(1, view) + _bytes(2, match_id.encode()))


def match_ended_body(status: str, winners: Sequence[int], delivered: Sequence[int],
                     ranks: Sequence[int]) -> bytes:
    """Returns a MatchEnded as an encoded SeatEvent body."""
    return payload(MATCH_ENDED, pb.MatchEnded(
        status=STATUSES[status], winners=winners, delivered=delivered, ranks=ranks,
    ).SerializeToString())


def act_result(decision_id: str, code: int, message: str = "") -> bytes:
    """Returns an encoded SeatEvent carrying an ActResult (sequence 0: a reply)."""
    return payload(ACT_RESULT, b"".join((
        _bytes(1, decision_id.encode()) if decision_id else b"", _uint(2, code == 0),
        _uint(3, code), _bytes(4, message.encode()) if message else b"")))


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


def assignment_message(a: Assignment) -> pb.Assignment:
    """Returns a ladder assignment (a seat to play) as a message."""
    return pb.Assignment(match_id=a.match_id, seat_token=a.seat_token, seat=a.seat,
                         players=a.players)


def standing_message(s: Standing) -> pb.Standing:
    """Returns one line of the ladder's standings as a message."""
    return pb.Standing(rank=s.rank, name=s.name, rating=s.rating, mu=s.mu, sigma=s.sigma,
                       games=s.games, wins=s.wins, mean_delivered=s.mean_delivered)


def ladder_summary(m: LadderMatchRow) -> pb.MatchSummary:
    """Returns a ladder match (``created`` in UNIX seconds) as a listing entry."""
    created = Timestamp()
    created.FromNanoseconds(int(m.created * 1e9))
    return pb.MatchSummary(match_id=m.match_id, status=STATUSES[m.status], players=m.players,
                           names=m.names, winners=m.winners, created=created, ladder=True)


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


def answer_of(msg: pb.ActRequest) -> tuple[str, int | None, Action | None]:
    """Returns (decision id, option index, action) of an answer, exactly one of the last
    two set; raises WireError naming the bad field."""
    if not msg.decision_id:
        raise WireError("decision_id: name the decision you answer")
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
    deadline_ms: int            # 0: the server's default
    time_bank_ms: int
    names: list[str]


def match_setup(msg: pb.CreateMatchRequest, name_limit: int) -> MatchSetup:
    """Returns the setup a CreateMatchRequest asks for; raises WireError for what is
    refused before the rules see it (player count, names, seed)."""
    if not 2 <= msg.players <= 5:
        raise WireError(f"players must be 2 to 5, got {msg.players} (R-SETUP-1)")
    if len(msg.names) > msg.players:
        raise WireError(f"names: at most one per seat ({msg.players}), got {len(msg.names)}")
    for i, name in enumerate(msg.names):
        if len(name) > name_limit:
            raise WireError(f"names[{i}]: at most {name_limit} characters")
    if msg.HasField("seed") and msg.seed >= 2**63:
        raise WireError(f"seed must be below 2**63, got {msg.seed}")
    return MatchSetup(
        players=msg.players,
        seed=msg.seed if msg.HasField("seed") else None,
        colours=list(msg.colours) or None,
        first_player=msg.first_player if msg.HasField("first_player") else None,
        deadline_ms=msg.time_control.deadline_ms,
        time_bank_ms=msg.time_control.time_bank_ms,
        names=list(msg.names))


# -- requests and replies of the command line ------------------------------------------


def create_request(players: int, *, seed: int | None = None, deadline_s: float | None = None,
                   time_bank_s: float = 0.0, names: Sequence[str] = ()
                   ) -> pb.CreateMatchRequest:
    """Returns the CreateMatchRequest for a match of ``players`` (times in seconds; no
    deadline: the server's default); raises ValueError for a deadline under 1 ms."""
    msg = pb.CreateMatchRequest(players=players, names=names)
    if seed is not None:
        msg.seed = seed
    if deadline_s is not None:
        if round(deadline_s * 1000) < 1:
            raise ValueError(f"deadline {deadline_s!r} s: at least 0.001 s")
        msg.time_control.deadline_ms = round(deadline_s * 1000)
    if time_bank_s:
        msg.time_control.time_bank_ms = round(time_bank_s * 1000)
    return msg


def record_request(match_id: str) -> pb.GetRecordRequest:
    """Returns the request for a match's game record (Organiser, Spectate or Ladder)."""
    return pb.GetRecordRequest(match_id=match_id)


def list_request(limit: int) -> pb.ListMatchesRequest:
    """Returns the request for the ``limit`` newest matches (Organiser.ListMatches)."""
    return pb.ListMatchesRequest(limit=limit)


def standings_request(players: int = 0) -> pb.StandingsRequest:
    """Returns the request for the ladder's standings (0: over all player counts)."""
    return pb.StandingsRequest(players=players)


def matches_request(name: str, limit: int) -> pb.MatchesRequest:
    """Returns the request for a ladder bot's ``limit`` most recent finished matches."""
    return pb.MatchesRequest(name=name, limit=limit)


def created(msg: pb.CreateMatchResponse) -> dict[str, Any]:
    """Returns a created match as ``{"match": ID, "tokens": [...]}`` (seat order)."""
    return {"match": msg.match_id, "tokens": list(msg.seat_tokens)}


def summary_data(msg: pb.MatchSummary) -> dict[str, Any]:
    """Returns a listing entry as JSON-ready data (protobuf's JSON mapping)."""
    data: dict[str, Any] = MessageToDict(msg)
    return data


def ladder_match_data(msg: pb.MatchSummary) -> dict[str, Any]:
    """Returns a ladder listing entry as ``{"match", "players", "names", "winners"}``."""
    return {"match": msg.match_id, "players": msg.players, "names": list(msg.names),
            "winners": list(msg.winners)}


def standings_data(msg: pb.StandingsResponse) -> dict[str, Any]:
    """Returns ``{"matches_finished": N, "standings": [{"rank", "name", "rating", "mu",
    "sigma", "games", "wins", "mean_delivered"}, ...]}`` from a Standings reply."""
    return {
        "matches_finished": msg.matches_finished,
        "standings": [{"rank": s.rank, "name": s.name, "rating": s.rating, "mu": s.mu,
                       "sigma": s.sigma, "games": s.games, "wins": s.wins,
                       "mean_delivered": s.mean_delivered} for s in msg.standings],
    }
