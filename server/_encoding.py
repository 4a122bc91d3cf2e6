"""The fast path of ``server.wire``: stream messages encoded from cached pieces.

Private to ``server.wire``. Protobuf encodes a message as the concatenation of its
fields, and a repeated field as one entry per value, so a stream message can be
joined from ready-made pieces: the bytes of a card id in the oven, of a seat's
public facts, of a legal-option tuple, of a public event. Most of what one
decision's view holds is what the last one held, so most pieces come from a
cache; the result is exactly what the generated classes would serialise (tests
check it against them). Every field number is read from the generated
descriptors, never typed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Generic, TypeVar

from google.protobuf.descriptor import Descriptor
from google.protobuf.timestamp_pb2 import Timestamp

from mammamia import SeatInfo, View
from mammamia_pb import arena_pb2 as pb


def number(message: Descriptor, field: str) -> int:
    """Returns the field number of ``field`` in ``message`` (from the descriptor)."""
    return int(message.fields_by_name[field].number)


def varint(n: int) -> bytes:
    """Returns ``n`` (not negative) as a protobuf varint."""
    if n < 0x80:
        return _SMALL[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL: Final = tuple(bytes((i,)) for i in range(0x80))


_FIELDS_CACHED: Final = 64
# The tags (field number and wire type) of fields 0 to 63, encoded once.
_VARINT_TAGS: Final = tuple(varint(f << 3) for f in range(_FIELDS_CACHED))
_LENGTH_TAGS: Final = tuple(varint(f << 3 | 2) for f in range(_FIELDS_CACHED))


def uint(field: int, value: int) -> bytes:
    """Returns a varint field, or nothing for 0 (proto3 leaves zero scalars out)."""
    return _VARINT_TAGS[field] + varint(value) if value else b""


def present(field: int, value: int) -> bytes:
    """Returns a varint field that is written even when 0 (an ``optional`` field)."""
    return _VARINT_TAGS[field] + varint(value)


def length(field: int, data: bytes) -> bytes:
    """Returns a length-delimited field (a string, bytes or an embedded message)."""
    return _LENGTH_TAGS[field] + varint(len(data)) + data


def text(field: int, value: str) -> bytes:
    """Returns a string field, or nothing for the empty string."""
    return length(field, value.encode()) if value else b""


K = TypeVar("K")
V = TypeVar("V")


class ByIdentity(Generic[K, V]):
    """A bounded cache of what is computed from immutable objects the engine hands out
    again and again as the same object (legal-action tuples), keyed by identity: a
    lookup costs no hashing. Each entry keeps its object alive, so no other object
    can take its id while it is cached."""

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
    return _Encoded(lambda value: length(field, value.encode()))


_COUNTS: Final = pb.IngredientCounts.DESCRIPTOR
_COUNT_FIELDS: Final = tuple(
    number(_COUNTS, k) for k in ("salami", "pineapple", "mushroom", "pepper", "olive")
)


def _ingredient_counts(field: int) -> _Encoded:
    # An IngredientCounts field is present even when all counts are 0.
    return _Encoded(
        lambda c: length(field, b"".join(uint(f, n) for f, n in zip(_COUNT_FIELDS, c, strict=True)))
    )


_VIEW: Final = pb.View.DESCRIPTOR
_INFO: Final = pb.SeatInfo.DESCRIPTOR
_V = {name: number(_VIEW, name) for name in _VIEW.fields_by_name}
_I = {name: number(_INFO, name) for name in _INFO.fields_by_name}
_PHASES: Final = {"turn": pb.PHASE_TURN, "resolve": pb.PHASE_RESOLVE, "over": pb.PHASE_OVER}

_DECIDING, _OVEN, _USED, _HAND_ORDERS, _WAITER = (
    _strings(_V[f]) for f in ("deciding", "oven", "used", "hand_orders", "waiter")
)
_TABLE, _HAND = _ingredient_counts(_V["table"]), _ingredient_counts(_V["hand"])
_COLOUR, _DELIVERED = _strings(_I["colour"]), _strings(_I["delivered"])

SeatFacts = tuple[str, int, bool]
"""A seat's display name, strikes in a row and whether it is on autopilot."""

_SEATS: dict[tuple[SeatInfo, SeatFacts], bytes] = {}
_SEATS_LIMIT: Final = 100_000


def _seat(info: SeatInfo, facts: SeatFacts) -> bytes:
    """Returns a View's ``seats`` entry for one seat's public facts."""
    key = (info, facts)
    data = _SEATS.get(key)
    if data is None:
        if len(_SEATS) >= _SEATS_LIMIT:
            _SEATS.clear()
        name, strikes, autopilot = facts
        data = _SEATS[key] = length(
            _V["seats"],
            b"".join(
                (
                    uint(_I["seat"], info.seat),
                    _COLOUR[info.colour],
                    uint(_I["hand_size"], info.hand_size),
                    uint(_I["orders_in_hand"], info.orders_in_hand),
                    uint(_I["waiter_size"], info.waiter_size),
                    b"".join(map(_DELIVERED.__getitem__, info.delivered)),
                    text(_I["name"], name),
                    uint(_I["strikes"], strikes),
                    uint(_I["autopilot"], autopilot),
                )
            ),
        )
    return data


_NO_FACTS: Final = ("", 0, False)


_SEAT, _PLAYERS, _ROUND, _PHASE, _TO_ACT, _SUPPLY, _REVEALED, _HOLDER, _WINNERS = (
    _V[f]
    for f in (
        "seat",
        "players",
        "round",
        "phase",
        "to_act",
        "supply_size",
        "revealed",
        "mamma_mia_holder",
        "winners",
    )
)
_PHASE_FIELDS: Final = {name: uint(_PHASE, value) for name, value in _PHASES.items()}


def view(v: View, facts: Sequence[SeatFacts] = ()) -> bytes:
    """Returns a view as an encoded View message; ``facts`` per seat (name, strikes,
    autopilot), none for a seat past its end."""
    parts = [
        b"" if v.seat is None else present(_SEAT, v.seat),
        uint(_PLAYERS, v.players),
        uint(_ROUND, v.round),
        _PHASE_FIELDS[v.phase],
        b"" if v.to_act is None else present(_TO_ACT, v.to_act),
        _DECIDING[v.deciding] if v.deciding else b"",
        uint(_SUPPLY, v.supply_size),
        b"".join(map(_OVEN.__getitem__, v.oven)),
        uint(_REVEALED, v.revealed),
        _TABLE[v.table],
        b"".join(map(_USED.__getitem__, v.used)),
        b"" if v.mamma_mia_holder is None else present(_HOLDER, v.mamma_mia_holder),
        *[
            _seat(info, facts[info.seat] if info.seat < len(facts) else _NO_FACTS)
            for info in v.seats
        ],
        _HAND[v.hand],
        b"".join(map(_HAND_ORDERS.__getitem__, v.hand_orders)),
        b"".join(map(_WAITER.__getitem__, v.waiter)),
    ]
    if v.winners:  # packed
        parts.append(length(_WINNERS, b"".join(varint(w) for w in v.winners)))
    return b"".join(parts)


_DECISION: Final = pb.DecisionRequest.DESCRIPTOR
_D = {name: number(_DECISION, name) for name in _DECISION.fields_by_name}
_TIMESTAMP_SECONDS, _TIMESTAMP_NANOS = (
    number(Timestamp.DESCRIPTOR, f) for f in ("seconds", "nanos")
)
_KIND_TURN: Final = uint(_D["kind"], pb.DECISION_KIND_TURN)
_KIND_RESOLVE: Final = uint(_D["kind"], pb.DECISION_KIND_RESOLVE)


def timestamp(ns: int) -> bytes:
    """Returns a UNIX time in nanoseconds as an encoded google.protobuf.Timestamp."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    return uint(_TIMESTAMP_SECONDS, seconds) + uint(_TIMESTAMP_NANOS, nanos)


(
    _DECISION_ID,
    _DECISION_VIEW,
    _DEADLINE,
    _DEADLINE_MS,
    _TIME_BANK_MS,
    _DEFAULT_AT,
    _DEFAULT_IN_MS,
) = (
    _D[f]
    for f in (
        "decision_id",
        "view",
        "deadline",
        "deadline_ms",
        "time_bank_ms",
        "default_at",
        "default_in_ms",
    )
)


def decision(
    decision_id: str,
    resolve: bool,
    view_bytes: bytes,
    options: bytes,
    deadline_ns: int,
    deadline_ms: int,
    time_bank_ms: int,
    default_ns: int,
    default_ms: int,
) -> bytes:
    """Returns an encoded DecisionRequest; ``options`` from ``options_field``."""
    return b"".join(
        (
            length(_DECISION_ID, decision_id.encode()),
            _KIND_RESOLVE if resolve else _KIND_TURN,
            length(_DECISION_VIEW, view_bytes),
            options,
            length(_DEADLINE, timestamp(deadline_ns)),
            uint(_DEADLINE_MS, deadline_ms),
            uint(_TIME_BANK_MS, time_bank_ms),
            length(_DEFAULT_AT, timestamp(default_ns)),
            uint(_DEFAULT_IN_MS, default_ms),
        )
    )


_OPTIONS_FIELD: Final = _D["options"]


def options_field(encoded_actions: Sequence[bytes]) -> bytes:
    """Returns the repeated ``options`` field of a DecisionRequest from encoded Actions."""
    return b"".join(length(_OPTIONS_FIELD, a) for a in encoded_actions)


_EVENT: Final = pb.SeatEvent.DESCRIPTOR
EVENT_FIELDS: Final = {name: number(_EVENT, name) for name in _EVENT.fields_by_name}
_SEQUENCE: Final = EVENT_FIELDS["sequence"]
_EVENTS: Final = number(pb.SeatEvents.DESCRIPTOR, "events")
_HISTORY: Final = number(pb.Snapshot.DESCRIPTOR, "history")


def seat_event(sequence: int, kind: str, message: bytes) -> bytes:
    """Returns an encoded SeatEvent with ``sequence`` (0: none) holding the encoded
    ``message`` in its ``kind`` field of the ``event`` oneof."""
    return uint(_SEQUENCE, sequence) + length(EVENT_FIELDS[kind], message)


def payload(kind: str, message: bytes) -> bytes:
    """Returns the ``event`` oneof of a SeatEvent holding ``message`` as ``kind``."""
    return length(EVENT_FIELDS[kind], message)


def numbered(sequence: int, payload: bytes) -> bytes:
    """Returns an encoded SeatEvent from its sequence and its ``payload``."""
    return uint(_SEQUENCE, sequence) + payload


def events_entry(event: bytes) -> bytes:
    """Returns an encoded SeatEvent as one ``events`` entry of a SeatEvents message;
    a message is the concatenation of its entries."""
    return length(_EVENTS, event)


_EVENTS_TAG: Final = varint(_EVENTS << 3 | 2)
_HISTORY_TAG: Final = varint(_HISTORY << 3 | 2)


def history_entry(entry: bytes) -> bytes:
    """Returns a ``SeatEvents.events`` entry as the same event's ``history`` entry of a
    Snapshot: only the field tag differs."""
    return _HISTORY_TAG + entry[len(_EVENTS_TAG) :]
