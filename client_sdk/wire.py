"""The one place where protobuf messages become SDK values, and answers become messages.

Bot authors never see protobuf: a ``SeatEvents`` message arrives here and its
events leave as the small values below (``Snapshot``, ``Asked``, ``Happened``,
``Ended``, ``Replied``), whose views are ``mammamia.View``s and whose events are
``mammamia.Event``s, the same types local play uses. Requests are built here too.

Its readers of a view (:func:`view`) and of a public event (:func:`event`) are the
project's only ones: the Rules service (``server.rules_service.wire``) reads a
seat's knowledge, sent as a seat's streams carry it, with them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeAlias

from mammamia import INGREDIENTS, Action, Event, Resolve, SeatInfo, Turn, View
from mammamia_pb import arena_pb2 as pb

if TYPE_CHECKING:
    import grpc.aio

    PlayCall: TypeAlias = grpc.aio.StreamStreamCall[pb.PlayRequest, pb.SeatEvents]
    """A Play call, as the SDK writes answers to it and reads events from it."""


class WireError(ValueError):
    """A message from the server that does not describe a valid value (names the field)."""


_PHASES: Final = {pb.PHASE_TURN: "turn", pb.PHASE_RESOLVE: "resolve", pb.PHASE_OVER: "over"}
_DRAWS: Final = {pb.DRAW_SOURCE_SUPPLY: "supply", pb.DRAW_SOURCE_WAITER: "waiter"}
_DRAW_VALUES: Final = {v: k for k, v in _DRAWS.items()}
_STATUSES: Final = {
    pb.MATCH_STATUS_WAITING: "waiting",
    pb.MATCH_STATUS_RUNNING: "running",
    pb.MATCH_STATUS_FINISHED: "finished",
    pb.MATCH_STATUS_ABORTED: "aborted",
}

Counts = tuple[int, int, int, int, int]


# -- what arrives ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The match at the start of a stream: ``sequence`` is the last numbered event it
    includes, ``history`` the numbered events the stream was asked to resume after
    (in order, never sent again), ``asked`` the seat's open decision, if any, and
    ``status`` the match's (``waiting``, ``running``, ``finished``, ``aborted``)."""

    sequence: int
    match_id: str
    view: View
    history: tuple[Happened, ...]
    asked: Asked | None
    status: str


@dataclass(frozen=True, slots=True)
class Asked:
    """A decision asked of the seat; ``view`` has no history (the caller adds it).
    ``default_in_ms`` is the time left, when it was sent, before the server answers
    for the seat (the deadline and the time bank left)."""

    decision_id: str
    resolve: bool
    view: View
    deadline_ms: int
    time_bank_ms: int
    default_in_ms: int


@dataclass(frozen=True, slots=True)
class Happened:
    """A numbered public event of the game."""

    sequence: int
    event: Event


@dataclass(frozen=True, slots=True)
class Defaulted:
    """The server answered for ``seat`` (numbered): its decision's time ran out."""

    sequence: int
    seat: int
    decision_id: str
    strikes: int
    autopilot: bool


@dataclass(frozen=True, slots=True)
class Ended:
    """The match ended: ``status`` is ``finished`` or ``aborted``; ``view`` is the
    seat's final view (without history); ``reason`` why it was aborted."""

    status: str
    winners: tuple[int, ...]
    delivered: tuple[int, ...]
    ranks: tuple[int, ...]
    view: View | None
    reason: str


@dataclass(frozen=True, slots=True)
class Replied:
    """The server's reply to an answer sent on the Play stream."""

    decision_id: str
    accepted: bool
    code: int
    message: str
    refusal: str
    """The contract's Refusal name (``REFUSAL_ILLEGAL``, ...); empty when accepted."""
    repeated: bool

    @property
    def still_open(self) -> bool:
        """Whether the refused decision is still open (answer it again)."""
        return self.refusal in ("REFUSAL_ILLEGAL", "REFUSAL_NO_SUCH_OPTION")


@dataclass(frozen=True, slots=True)
class Waiting:
    """The call is a place (the reply to ``wait``): ``place`` is the token an organiser
    names to seat it (CreateMatchRequest.places)."""

    place: str


Incoming = Snapshot | Asked | Happened | Defaulted | Ended | Replied | Waiting


@dataclass(frozen=True, slots=True)
class Assigned:
    """A ladder match assigned to the bot, on the host at ``host_address`` (empty: the
    server the bot entered through)."""

    match_id: str
    seat_token: str
    seat: int
    players: int
    commitment: str = ""  # the match's commitment to its seed (docs/fairness.md)
    set_id: str = ""  # its duplicate set ("" for a match played alone)
    set_index: int = 0  # its place in the set: the seats' rotation
    host_address: str = ""


def incomings(msg: pb.SeatEvents) -> list[Incoming]:
    """Returns the SDK values of a stream message's events, in order (leaving out kinds
    this SDK does not know); raises WireError for a malformed event."""
    return [item for item in map(incoming, msg.events) if item is not None]


def incoming(msg: pb.SeatEvent) -> Incoming | None:
    """Returns the SDK value of a stream message (None for a kind this SDK does not know);
    raises WireError for a malformed one."""
    which = msg.WhichOneof("event")
    seq = int(msg.sequence)
    if which == "snapshot":
        s = msg.snapshot
        history = tuple(h for h in map(incoming, s.history) if isinstance(h, Happened))
        return Snapshot(
            seq,
            s.match_id,
            view(s.view),
            history,
            asked(s.decision) if s.HasField("decision") else None,
            _STATUSES.get(s.status, "running"),
        )
    if which == "decision":
        return asked(msg.decision)
    if which == "act_result":
        r = msg.act_result
        return Replied(
            r.decision_id,
            r.accepted,
            int(r.code),
            r.message,
            "" if r.accepted else pb.Refusal.Name(r.refusal),
            r.repeated,
        )
    if which == "match_ended":
        e = msg.match_ended
        return Ended(
            _STATUSES.get(e.status, "aborted"),
            tuple(e.winners),
            tuple(e.delivered),
            tuple(e.ranks),
            view(e.view) if e.HasField("view") else None,
            e.reason,
        )
    if which == "deadline_passed":
        d = msg.deadline_passed
        return Defaulted(seq, int(d.seat), d.decision_id, int(d.strikes), d.autopilot)
    if which == "waiting":
        return Waiting(msg.waiting.place)
    happened = event(msg)
    return None if happened is None else Happened(seq, happened)


def asked(d: pb.DecisionRequest) -> Asked:
    """Returns the decision a request asks; raises WireError for an unknown kind."""
    if d.kind not in (pb.DECISION_KIND_TURN, pb.DECISION_KIND_RESOLVE):
        raise WireError(f"decision {d.decision_id!r}: kind {d.kind} is not a decision kind")
    legal = tuple(action(a) for a in d.options)
    return Asked(
        d.decision_id,
        d.kind == pb.DECISION_KIND_RESOLVE,
        view(d.view, legal=legal),
        int(d.deadline_ms),
        int(d.time_bank_ms),
        int(d.default_in_ms),
    )


def event(msg: pb.SeatEvent) -> Event | None:
    """Returns the public game event a stream message holds (None for the other kinds:
    snapshots, decisions, replies, ends); raises WireError for a malformed one."""
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


def game_over_event() -> Event:
    """Returns the public event that closes a game's history (as local views have it)."""
    return Event("game_over")


def counts(c: pb.IngredientCounts) -> Counts:
    """Returns ingredient counts by kind from a message."""
    return (int(c.salami), int(c.pineapple), int(c.mushroom), int(c.pepper), int(c.olive))


def view(msg: pb.View, history: Sequence[Event] = (), legal: Iterable[Action] = ()) -> View:
    """Returns the View a message describes, with ``history`` and ``legal`` added;
    raises WireError for an unknown phase."""
    phase = _PHASES.get(msg.phase)
    if phase is None:
        raise WireError(f"view.phase: {msg.phase} is not a phase")
    seats = tuple(
        SeatInfo(
            int(s.seat),
            s.colour,
            int(s.hand_size),
            int(s.orders_in_hand),
            int(s.waiter_size),
            tuple(s.delivered),
        )
        for s in msg.seats
    )
    return View(
        seat=int(msg.seat) if msg.HasField("seat") else None,
        players=int(msg.players),
        colours=tuple(s.colour for s in seats),
        round=int(msg.round),
        phase=phase,
        to_act=int(msg.to_act) if msg.HasField("to_act") else None,
        deciding=msg.deciding or None,
        supply_size=int(msg.supply_size),
        oven=tuple(msg.oven),
        revealed=int(msg.revealed),
        table=counts(msg.table),
        used=tuple(msg.used),
        mamma_mia_holder=int(msg.mamma_mia_holder) if msg.HasField("mamma_mia_holder") else None,
        seats=seats,
        hand=counts(msg.hand),
        hand_orders=tuple(msg.hand_orders),
        waiter=tuple(msg.waiter),
        history=tuple(history),
        legal=tuple(legal),
        winners=tuple(int(w) for w in msg.winners),
    )


def _turn(t: pb.TurnAction) -> Turn:
    draw = None
    if t.HasField("draw"):
        draw = _DRAWS.get(t.draw)
        if draw is None:
            raise WireError(f"turn.draw: {t.draw} is not a draw source")
    if getattr(t, "pass"):  # `pass` is a Python keyword
        return Turn(None, 0, t.order or None, draw)
    if t.ingredient not in INGREDIENTS:
        raise WireError(f"turn.ingredient: unknown ingredient {t.ingredient!r}")
    return Turn(t.ingredient, int(t.count), t.order or None, draw)


def action(msg: pb.Action) -> Action:
    """Returns the Turn or Resolve a message describes; raises WireError."""
    which = msg.WhichOneof("kind")
    if which == "turn":
        return _turn(msg.turn)
    if which == "resolve":
        r = msg.resolve
        if not r.bake:
            return Resolve(False)
        hand = counts(r.hand)
        return Resolve(True, r.ingredient or None, hand if any(hand) else None)
    raise WireError("action: neither 'turn' nor 'resolve' is set")


# -- what leaves -------------------------------------------------------------------------


def join_request(name: str, client_seed: str = "") -> pb.JoinRequest:
    """Returns the request that takes a seat under a display name, adding the seat's
    own entropy to the deal (``client_seed``, at most 64 characters)."""
    return pb.JoinRequest(name=name, client_seed=client_seed)


def arrived(read: object) -> pb.SeatEvents | None:
    """Returns what a read of a Play call gave as a message, None at the stream's end."""
    return read if isinstance(read, pb.SeatEvents) else None


def sit(
    token: str, after_sequence: int, name: str, client_seed: str, batch_ms: int = 0
) -> pb.PlayRequest:
    """Returns the PlayMatches message that takes the seat ``token`` (resuming after
    ``after_sequence``) under ``name``, with the seat's own entropy and the batching
    bound its stream asks for (0: the server's)."""
    return pb.PlayRequest(
        sit=pb.SitRequest(
            seat_token=token,
            after_sequence=after_sequence,
            name=name,
            client_seed=client_seed,
            batch_ms=batch_ms,
        )
    )


def wait(name: str, batch_ms: int = 0) -> pb.PlayRequest:
    """Returns the PlayMatches message that makes the call a place, whose seats take
    ``name`` ("": the organiser's) and ask for the batching bound ``batch_ms``."""
    return pb.PlayRequest(wait=pb.WaitRequest(name=name, batch_ms=batch_ms))


def observe(after_sequence: int, batch_ms: int = 0) -> pb.PlayRequest:
    """Returns the first Play message: resume after ``after_sequence``, with the
    batching bound the stream asks for (0: the server's)."""
    return pb.PlayRequest(
        observe=pb.ObserveRequest(after_sequence=after_sequence, batch_ms=batch_ms)
    )


def watch_request(match_id: str, after_sequence: int = 0) -> pb.WatchRequest:
    """Returns the request of a spectator's Watch stream of ``match_id``."""
    return pb.WatchRequest(match_id=match_id, after_sequence=after_sequence)


def observe_request(after_sequence: int) -> pb.ObserveRequest:
    """Returns the request of an Observe stream resuming after ``after_sequence``."""
    return pb.ObserveRequest(after_sequence=after_sequence)


def answer(decision_id: str, option: int, note: str = "") -> pb.PlayRequest:
    """Returns a Play message answering ``decision_id`` with option number ``option``,
    with the bot's private ``note`` ("" for none)."""
    return pb.PlayRequest(act=pb.ActRequest(decision_id=decision_id, option=option, note=note))


def register_request(name: str) -> pb.RegisterRequest:
    """Returns the request that registers a ladder bot name."""
    return pb.RegisterRequest(name=name)


def registered_key(msg: pb.RegisterResponse) -> str:
    """Returns the secret key of a registration."""
    return str(msg.key)


def enter_request(name: str, version: str = "") -> pb.EnterRequest:
    """Returns the request that enters the ladder as ``version`` of ``name``."""
    return pb.EnterRequest(name=name, version=version)


def notice(msg: pb.Assignment) -> str | None:
    """Returns why the bot waits when an Enter stream's message is a notice (no
    match: the ladder is paused, or has resumed), or None when it is a seat."""
    return None if msg.match_id else msg.waiting


def assigned(msg: pb.Assignment) -> Assigned:
    """Returns a ladder assignment."""
    deal_set = msg.deal_set if msg.HasField("deal_set") else None
    return Assigned(
        msg.match_id,
        msg.seat_token,
        int(msg.seat),
        int(msg.players),
        msg.commitment,
        deal_set.set_id if deal_set else "",
        int(deal_set.index) if deal_set else 0,
        msg.host_address,
    )


def joined(msg: pb.JoinResponse) -> tuple[str, int, str, int, int]:
    """Returns (match id, seat, colour, players, deadline ms) of a Join reply."""
    return (msg.match_id, int(msg.seat), msg.colour, int(msg.players), int(msg.deadline_ms))
