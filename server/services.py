"""The gRPC servicers: Seat, Spectate and Organiser. Thin: they authenticate, convert
with ``server.wire``, call the host and its matches, and map what the match says
to status codes (``STATUS_OF``, the one table of it).

Event streams (Observe, Play, Watch) send ready-made bytes (``server.wire``),
every item pending for a stream joined into one ``SeatEvents`` message, so the
handlers for those methods are registered here with a pass-through serializer
(``register``) instead of the generated helpers.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn, TypeAlias

import grpc
import structlog

from mammamia import IllegalActionError
from mammamia.fairness import check_client_seed
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from . import visibility, wire
from .answers import Outcome, Refusal, refused
from .db.connection import StorageError
from .events import Ended
from .host import Host, HostClosed
from .match import NAME_LIMIT
from .places import PlaceError, Places
from .quotas import Quotas
from .runner import HOLD_SECONDS, Follower, Runner, holding
from .tokens import same_secret

log = structlog.get_logger()

SEAT_TOKEN = "seat-token"
ORGANISER_KEY = "organiser-key"
LIST_LIMIT_MAX = 1000
FIRST_MESSAGE_SECONDS = 5.0
"""How long a streaming call refused as it opens (a bad seat token or organiser key)
may take to send its first message."""

STATUS_OF: Final = {
    None: grpc.StatusCode.OK,
    Refusal.MALFORMED: grpc.StatusCode.INVALID_ARGUMENT,
    Refusal.UNKNOWN_DECISION: grpc.StatusCode.FAILED_PRECONDITION,
    Refusal.OTHER_SEAT: grpc.StatusCode.PERMISSION_DENIED,
    Refusal.ALREADY_ANSWERED: grpc.StatusCode.FAILED_PRECONDITION,
    Refusal.DEFAULTED: grpc.StatusCode.FAILED_PRECONDITION,
    Refusal.NO_SUCH_OPTION: grpc.StatusCode.INVALID_ARGUMENT,
    Refusal.ILLEGAL: grpc.StatusCode.INVALID_ARGUMENT,
}
"""The gRPC status code of each answer outcome (None: accepted), as arena.proto lists."""

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


def metadata(context: Context, key: str) -> str | None:
    """Returns the value of the call's metadata ``key`` as text, or None when absent."""
    for k, v in context.invocation_metadata() or ():
        if k == key:
            return v if isinstance(v, str) else v.decode("utf-8", "replace")
    return None


async def abort(context: Context, code: grpc.StatusCode, message: str) -> NoReturn:
    """Ends the call with ``code`` and ``message``; never returns."""
    await context.abort(code, message)
    raise AssertionError("unreachable")  # context.abort raises


class Refused(Exception):
    """A call refused before it began: its status code and message."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# -- streams ---------------------------------------------------------------------------


class Replies:
    """A Play call's replies not yet sent, each with the log length when its answer
    came. Bounded: the reader waits for room (:meth:`room`) before it reads the next
    answer, so a client that stops reading its stream stops being read, and HTTP/2
    flow control holds back what it sends."""

    __slots__ = ("_items", "_limit", "_room")

    def __init__(self, limit: int) -> None:
        self._items: deque[tuple[int, int, bytes]] = deque()
        self._limit = limit
        self._room = asyncio.Event()
        self._room.set()

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)

    async def room(self) -> None:
        """Returns once fewer than the limit wait to be sent."""
        while len(self._items) >= self._limit:
            self._room.clear()
            await self._room.wait()

    def append(self, position: int, reply: bytes, ready: int) -> None:
        """Queues ``reply``, to go before the log entries from ``position`` on, once the
        log up to ``ready`` may be sent (what the answer caused is committed)."""
        self._items.append((position, ready, reply))

    def due(self, cursor: int, visible: int) -> bool:
        """Returns True when the first reply goes before the log entry at ``cursor``
        and the log it waits for is ``visible``."""
        return bool(self._items) and self._items[0][0] <= cursor and self._items[0][1] <= visible

    def take(self) -> bytes:
        """Returns the first reply, removed (and makes room for the reader)."""
        reply = self._items.popleft()[2]
        self._room.set()
        return reply


async def _stream(
    match: Runner,
    viewer: int | None,
    after: int,
    replies: Replies | None = None,
    opened: Callable[[Follower], None] | None = None,
    stopped: Callable[[], bool] | None = None,
    hold: float = HOLD_SECONDS,
) -> AsyncIterator[bytes]:
    """Yields encoded ``SeatEvents`` messages for ``viewer``: first the snapshot, then,
    each time the stream is woken (see ``server.runner``), every pending item as one
    message, until the match's end has been sent, or until ``stopped()`` is true when
    the stream is woken.

    ``replies`` (Play): each reply goes out before the log entries that came after
    its answer. ``hold``: how long events that ask nothing of ``viewer`` may wait.
    """
    state = match.match
    # The snapshot shows only what is committed (server.db.journal): wait for the inputs
    # still being written.
    await match.caught_up()
    follower = match.follow(viewer, hold)
    if opened is not None:
        opened(follower)
    try:
        now = match.clock.now()
        first = [wire.snapshot_entry(visibility.snapshot(state, viewer, after), state, now)]
        if state.ended is not None:
            first.append(
                wire.stream_entry(visibility.final(state, state.ended, viewer), state, now)
            )
            yield b"".join(first)
            return
        yield b"".join(first)
        entries = state.log
        while True:
            follower.wake.clear()
            pending: list[bytes] = []
            done = False
            now = match.clock.now()
            while follower.cursor < match.visible or replies:
                if replies is not None and replies.due(follower.cursor, match.visible):
                    pending.append(replies.take())
                    continue
                if follower.cursor >= match.visible:
                    break  # a reply waits for its answer to be committed
                entry = entries[follower.cursor]
                follower.cursor += 1
                item = visibility.item(state, entry, viewer)
                if item is not None:
                    pending.append(wire.stream_entry(item, state, now))
                done = done or isinstance(entry, Ended)
            if pending:
                yield b"".join(pending)
            if done:
                return
            await follower.wake.wait()
            if stopped is not None and stopped():
                return
    finally:
        match.unfollow(follower)


# -- Seat ------------------------------------------------------------------------------


class SeatService:
    """Seat: Join, Observe, Act and Play for the holder of a seat token."""

    def __init__(self, host: Host, quotas: Quotas, places: Places) -> None:
        self.host = host
        self.quotas = quotas
        self.places = places
        self._streams: dict[tuple[str, int], int] = {}  # open Observe and Play per seat

    def _seat(self, context: Context) -> tuple[Runner, int]:
        """Returns (match, seat) the call's seat token names; raises Refused."""
        token = metadata(context, SEAT_TOKEN)
        if not token:
            raise Refused(
                grpc.StatusCode.UNAUTHENTICATED,
                f"missing '{SEAT_TOKEN}' metadata: send the seat token of your seat",
            )
        return self._seat_of(token, f"'{SEAT_TOKEN}'")

    def _seat_of(self, token: str, named: str) -> tuple[Runner, int]:
        """Returns (match, seat) of ``token`` (the input ``named``); raises Refused."""
        found = self.host.seat_of(token)
        if found is None and (gone := self.host.retired(token)) is not None:
            raise Refused(
                grpc.StatusCode.NOT_FOUND,
                f"match {gone!r} has ended and is no longer held by this server; "
                f"its record is in Spectate.GetRecord",
            )
        if found is None:
            raise Refused(
                grpc.StatusCode.UNAUTHENTICATED,
                f"unknown {named}: no seat of a match on this server has it",
            )
        # Every line logged for this call names the match and the seat.
        structlog.contextvars.bind_contextvars(match=found[0].id, seat=found[1])
        return found

    @contextlib.contextmanager
    def _stream_of(self, match: Runner, seat: int) -> Iterator[None]:
        """Counts one open Observe or Play stream of ``seat`` while inside; raises
        Refused when the seat holds its limit of open streams already."""
        key = (match.id, seat)
        held = self._streams.get(key, 0)
        limit = self.quotas.streams_per_seat
        if held >= limit:
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"seat {seat} already has {limit} open streams (Observe and Play), "
                f"the most a seat may hold: close one first",
            )
        self._streams[key] = held + 1
        try:
            yield
        finally:
            left = self._streams.pop(key) - 1
            if left:
                self._streams[key] = left

    async def _unary_seat(self, context: Context) -> tuple[Runner, int]:
        try:
            return self._seat(context)
        except Refused as e:
            await abort(context, e.code, e.message)

    async def Join(self, request: pb.JoinRequest, context: Context) -> pb.JoinResponse:
        match, seat = await self._unary_seat(context)
        try:
            name, client_seed = _joining(request.name, request.client_seed)
        except Refused as e:
            await abort(context, e.code, e.message)
        match.join(seat, name, client_seed)
        return wire.join_response(match.match, seat)

    async def Observe(self, request: pb.ObserveRequest, context: Context) -> AsyncIterator[bytes]:
        with contextlib.ExitStack() as held:
            try:
                match, seat = self._seat(context)
                held.enter_context(self._stream_of(match, seat))
            except Refused as e:
                _refuse_stream(context, e)
                return
            match.join(seat)
            async for message in _stream(
                match, seat, request.after_sequence, hold=holding(request.batch_ms)
            ):
                yield message

    async def Act(self, request: pb.ActRequest, context: Context) -> pb.ActResponse:
        match, seat = await self._unary_seat(context)
        outcome = _act(match, seat, request)
        if outcome.accepted:
            try:
                await match.committed()  # replied to once the answer would survive a crash
            except StorageError as e:
                await abort(
                    context, grpc.StatusCode.UNAVAILABLE, f"the answer could not be stored: {e}"
                )
        if not outcome.accepted:
            assert outcome.refusal is not None
            context.set_trailing_metadata(
                (
                    ("refusal", f"REFUSAL_{outcome.refusal.name}"),
                    *((("rule", outcome.rule),) if outcome.rule else ()),
                )
            )
            await abort(context, STATUS_OF[outcome.refusal], outcome.message)
        return wire.act_response(request.decision_id, outcome)

    async def Play(
        self, requests: AsyncIterator[pb.PlayRequest], context: Context
    ) -> AsyncIterator[bytes]:
        with contextlib.ExitStack() as held:
            try:
                match, seat = self._seat(context)
                held.enter_context(self._stream_of(match, seat))
            except Refused as e:
                await _refuse_opening(requests, context, e)
                return
            try:
                first = await _next(requests)
            except Exception:  # bytes that do not decode as a PlayRequest
                _refuse_stream(
                    context,
                    Refused(
                        grpc.StatusCode.INVALID_ARGUMENT,
                        "the first Play message could not be read as a PlayRequest",
                    ),
                )
                return
            if first is None or first.WhichOneof("message") != "observe":
                _refuse_stream(
                    context,
                    Refused(
                        grpc.StatusCode.INVALID_ARGUMENT,
                        "the first message of Play must carry 'observe'",
                    ),
                )
                return
            match.join(seat)
            call = PlayCall(requests, self.quotas.reply_queue, "Play")
            try:
                async for message in call.sit(
                    match, seat, first.observe.after_sequence, holding(first.observe.batch_ms)
                ):
                    yield message
                if call.failed:
                    _refuse_stream(context, Refused(grpc.StatusCode.INVALID_ARGUMENT, call.failed))
            finally:
                call.close()

    async def PlayMatches(
        self, requests: AsyncIterator[pb.PlayRequest], context: Context
    ) -> AsyncIterator[bytes]:
        call = PlayCall(
            requests,
            self.quotas.reply_queue,
            "PlayMatches",
            self._take,
            Placing(self.places, self._take_placed),
        )
        try:
            # Headers at once: the client knows its call is taken up before it sits.
            await context.send_initial_metadata(())
            while (seated := await call.next_sit()) is not None:
                if isinstance(seated, Refused):
                    _refuse_stream(context, seated)
                    return
                if isinstance(seated, str):  # the call is a place: its token
                    yield wire.waiting(seated)
                    continue
                taken, sitting = seated
                structlog.contextvars.bind_contextvars(match=taken.match.id, seat=taken.seat)
                try:
                    with taken.held:
                        async for message in call.sit(
                            taken.match, taken.seat, taken.after, taken.hold, sitting
                        ):
                            yield message
                finally:
                    structlog.contextvars.unbind_contextvars("match", "seat")
            if call.failed:
                _refuse_stream(context, Refused(grpc.StatusCode.INVALID_ARGUMENT, call.failed))
        finally:
            call.close()

    def _take(self, sit: pb.SitRequest) -> Taken:
        """Returns the seat a PlayMatches ``sit`` takes, joined; raises Refused.

        Called by the call's reader as the sit is read, not by the handler once it is
        woken: on a busy server every hand-off between tasks waits its turn of the
        event loop, and the seat that completes a match starts it at once."""
        match, seat = self._seat_of(sit.seat_token, "sit.seat_token")
        name, client_seed = _joining(sit.name, sit.client_seed, "sit.")
        return self._joined(
            match, seat, name, client_seed, sit.after_sequence, holding(sit.batch_ms)
        )

    def _take_placed(self, match: Runner, seat: int, name: str, hold: float) -> Taken:
        """Returns the seat an organiser gave a place, joined with the place's name (""
        keeps the seat's); raises Refused."""
        return self._joined(match, seat, name or None, None, 0, hold)

    def _joined(
        self,
        match: Runner,
        seat: int,
        name: str | None,
        client_seed: str | None,
        after: int,
        hold: float,
    ) -> Taken:
        """Returns ``seat`` taken and joined, holding one of its open streams; raises
        Refused when it holds its limit of them already."""
        held = contextlib.ExitStack()
        held.enter_context(self._stream_of(match, seat))
        match.join(seat, name, client_seed)
        return Taken(match, seat, after, hold, held)


@dataclass(slots=True)
class Sitting:
    """The seat a Play or PlayMatches call plays now: its match, its replies not yet
    sent, and the followers of its stream (the stream's one, once open)."""

    match: Runner
    seat: int
    replies: Replies
    followers: list[Follower] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Taken:
    """A seat a PlayMatches ``sit`` took, joined: where its stream starts (``after``),
    its hold, and the open-stream count it holds until its stream ends (``held``)."""

    match: Runner
    seat: int
    after: int
    hold: float
    held: contextlib.ExitStack


Take = Callable[[pb.SitRequest], Taken]
"""Takes the seat a ``sit`` names; raises Refused."""

Seated = tuple[Taken, Sitting] | Refused | str
"""What a PlayMatches ``sit`` came to: the seat taken and its place on the call, or
why the call ends; or, after a ``wait``, the token of the place the call has become."""


TakePlaced = Callable[[Runner, int, str, float], Taken]
"""Takes the seat an organiser gave a place: (match, seat, the place's name, its
hold); raises Refused."""


@dataclass(frozen=True, slots=True)
class Placing:
    """What a PlayMatches call needs to become a place: the server's places, and how
    a place's seat is taken."""

    places: Places
    take: TakePlaced


class PlayCall:
    """The client's side of a Play or PlayMatches call, read by one task for the
    whole call (a read is never cancelled midway, so no message is lost between two
    matches): answers go to the seat in play, and, on PlayMatches, each ``sit``
    between matches takes its seat (``take``) and waits for :meth:`next_sit`; or,
    once a ``wait`` has made the call a place, an organiser's CreateMatch seats it
    (:meth:`offer`, see ``server.places``)."""

    def __init__(
        self,
        requests: AsyncIterator[pb.PlayRequest],
        reply_limit: int,
        method: str,
        take: Take | None = None,
        placing: Placing | None = None,
    ) -> None:
        self._requests = requests
        self._reply_limit = reply_limit
        self._method = method
        self._take = take
        self._placing = placing
        # Once the call is a place: its token, its seats' name and hold, and the seat
        # an organiser gave it while its match in play had not ended.
        self._place = ""
        self._place_name = ""
        self._place_hold = HOLD_SECONDS
        self._offered: tuple[Runner, int] | None = None
        self._sitting: Sitting | None = None  # the seat the call's answers go to
        self._sits: asyncio.Queue[Seated | None] = asyncio.Queue()
        #: Why the call must end with INVALID_ARGUMENT ("" while nothing is wrong).
        self.failed = ""
        self._reader: asyncio.Future[None] | None = None

    async def next_sit(self) -> Seated | None:
        """Returns what the client's next ``sit`` came to (PlayMatches, between
        matches), or None once the client has closed its side or the call has failed
        (see ``failed``)."""
        self._start()
        if self._offered is not None and self._between():
            self._take_offered()
        return await self._sits.get()

    @property
    def offered(self) -> bool:
        """Whether a seat an organiser gave the place waits for its match to end."""
        return self._offered is not None

    def offer(self, match: Runner, seat: int) -> None:
        """Seats the place in ``seat`` of ``match``: at once between matches, else once
        the match in play has ended (the handler takes it then, see next_sit)."""
        self._offered = (match, seat)
        if self._between():
            self._take_offered()

    def _between(self) -> bool:
        sitting = self._sitting
        return sitting is None or sitting.match.match.ended is not None

    def _take_offered(self) -> None:
        assert self._offered is not None and self._placing is not None
        match, seat = self._offered
        self._offered = None
        try:
            taken = self._placing.take(match, seat, self._place_name, self._place_hold)
        except Refused as e:
            self._sits.put_nowait(e)
            return
        self._seated(taken)

    async def sit(
        self,
        match: Runner,
        seat: int,
        after: int,
        hold: float = HOLD_SECONDS,
        sitting: Sitting | None = None,
    ) -> AsyncIterator[bytes]:
        """Yields the messages of ``seat``'s stream until its match's end has been sent,
        answering the acts that come meanwhile (``hold``: see ``_stream``). The caller
        has taken the seat (``Runner.join``); ``sitting`` is its place on the call, if
        the reader made it already."""
        if sitting is None:
            sitting = self._sitting = Sitting(match, seat, Replies(self._reply_limit))
        self._start()
        try:
            async for message in _stream(
                match,
                seat,
                after,
                sitting.replies,
                sitting.followers.append,
                lambda: bool(self.failed),
                hold,
            ):
                yield message
        finally:
            if self._sitting is sitting:  # (not a seat the next sit took meanwhile)
                self._sitting = None

    def close(self) -> None:
        """Stops reading the client's messages, and lets go of the seats taken by sits
        not played."""
        if self._reader is not None:
            self._reader.cancel()
        if self._place:
            assert self._placing is not None
            self._placing.places.remove(self._place)
            self._offered = None  # (its seat is left to its deadlines)
        while not self._sits.empty():
            seated = self._sits.get_nowait()
            if isinstance(seated, tuple):
                seated[0].held.close()

    def _start(self) -> None:
        if self._reader is None:
            self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            await self._read_all()
        except Exception as e:
            # A message gRPC could not decode (or a broken read) ends the call: a
            # stream that no longer reads its answers must not look alive.
            log.warning("play_read_failed", error=f"{type(e).__name__}: {e}"[:200])
            self._fail(f"a {self._method} message could not be read as a PlayRequest")

    def _fail(self, why: str) -> None:
        self.failed = self.failed or why
        self._sits.put_nowait(None)
        if self._sitting is not None:
            for follower in self._sitting.followers:
                follower.wake.set()

    async def _read_all(self) -> None:
        while True:
            if self._sitting is not None:
                await self._sitting.replies.room()
            req = await _next(self._requests)
            if req is None:
                self._sits.put_nowait(None)
                return
            kind = req.WhichOneof("message")
            sitting = self._sitting
            if self._method == "PlayMatches" and self._between():
                if kind in ("sit", "wait") and self._place:
                    self._fail(
                        f"a place takes no {kind!r}: its seats come from the "
                        f"organiser's CreateMatch"
                    )
                    return
                if kind == "sit":
                    if not self._seat(req.sit):
                        return
                elif kind == "wait":
                    if not self._wait(req.wait):
                        return
                elif kind != "act":  # (a late answer to an ended match: dropped)
                    self._fail(
                        f"between matches PlayMatches takes only 'sit', got "
                        f"{kind or 'an empty message'!r}"
                    )
                    return
                continue
            if sitting is None:
                continue
            self._answer(sitting, req, kind)

    def _seat(self, sit: pb.SitRequest) -> bool:
        """Takes the seat of a ``sit`` and hands it to the call's handler; returns False
        when the sit is refused (the handler ends the call with the refusal's status)."""
        assert self._take is not None
        try:
            taken = self._take(sit)
        except Refused as e:
            self._sits.put_nowait(e)
            return False
        self._seated(taken)
        return True

    def _seated(self, taken: Taken) -> None:
        # Every later message meets this seat, from the moment it is taken.
        sitting = self._sitting = Sitting(taken.match, taken.seat, Replies(self._reply_limit))
        self._sits.put_nowait((taken, sitting))

    def _wait(self, wait: pb.WaitRequest) -> bool:
        """Makes the call a place and hands its token to the call's handler; returns
        False when the wait is refused (the handler ends the call with the refusal)."""
        assert self._placing is not None
        try:
            self._place_name, _ = _joining(wait.name, "", "wait.")
        except Refused as e:
            self._sits.put_nowait(e)
            return False
        self._place_hold = holding(wait.batch_ms)
        self._place = self._placing.places.add(self)
        self._sits.put_nowait(self._place)
        return True

    def _answer(self, sitting: Sitting, req: pb.PlayRequest, kind: str | None) -> None:
        match = sitting.match
        # The reply goes out ahead of what the answer caused: the log entries
        # appended from this length on.
        position = len(match.match.log)
        if kind == "act":
            outcome = _act(match, sitting.seat, req.act)
            decision_id = req.act.decision_id
        else:
            outcome = refused(
                Refusal.MALFORMED,
                "after the first message, Play takes only 'act'"
                if self._method == "Play"
                else "while a match is in "
                "play, PlayMatches takes only 'act' (the next 'sit' goes after "
                "match_ended)",
            )
            decision_id = ""
        sitting.replies.append(
            position,
            wire.act_result(decision_id, outcome, STATUS_OF[outcome.refusal].value[0]),
            len(match.match.log),
        )
        # A refusal goes at once: the seat may have to answer again. An accepted
        # answer's reply waits, as other events do, at most the stream's hold, to go
        # with what it caused and usually with the seat's next request.
        for follower in sitting.followers:
            if outcome.accepted:
                match.hold(follower)
            else:
                follower.wake.set()


def _joining(name: str, client_seed: str, prefix: str = "") -> tuple[str, str]:
    """Returns the name and the client seed ("": none) a seat joins with, checked;
    raises Refused naming the field (``prefix`` before its name)."""
    if len(name) > NAME_LIMIT:
        raise Refused(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"{prefix}name: at most {NAME_LIMIT} characters, got {len(name)}",
        )
    try:
        return name, check_client_seed(client_seed)
    except ValueError as e:
        raise Refused(grpc.StatusCode.INVALID_ARGUMENT, f"{prefix}{e}") from e


def _refuse_stream(context: Context, refusal: Refused) -> None:
    """Ends a streaming call with a status, without sending a message (aborting from
    inside a streaming handler can surface to the client as INTERNAL)."""
    context.set_code(refusal.code)
    context.set_details(refusal.message)


async def _refuse_opening(requests: AsyncIterator[Any], context: Context, refusal: Refused) -> None:
    """Ends a client-streaming call refused as it opens, once its first message has
    come (or after FIRST_MESSAGE_SECONDS): a status sent while the client's first
    message is on its way fails the client's write, which it sees as INTERNAL."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(anext(requests, None), FIRST_MESSAGE_SECONDS)
    _refuse_stream(context, refusal)


async def _next(requests: AsyncIterator[pb.PlayRequest]) -> pb.PlayRequest | None:
    """Returns the client's next Play message, or None once it has closed its side."""
    return await anext(requests, None)


def _act(match: Runner, seat: int, request: pb.ActRequest) -> Outcome:
    """Returns the outcome of an answer after offering it to the match."""
    try:
        decision_id, option, action = wire.answer_of(request)
    except wire.WireError as e:
        return refused(Refusal.MALFORMED, str(e))
    return match.answer(seat, decision_id, option, action)


# -- Spectate --------------------------------------------------------------------------


QUOTE_LIMIT: Final = 80
"""How much of a caller's input a status message quotes back."""


def _quoted(text: str) -> str:
    """Returns ``text`` for a status message: quoted, and cut to QUOTE_LIMIT characters."""
    return repr(text) if len(text) <= QUOTE_LIMIT else repr(text[:QUOTE_LIMIT]) + "..."


async def _record(host: Host, match_id: str, context: Context, so_far: bool) -> pb.GameRecord:
    match = host.get(match_id)
    if match is not None and not match.ended:
        if so_far:
            return wire.game_record(match_id, match.record_so_far())
        await abort(
            context,
            grpc.StatusCode.FAILED_PRECONDITION,
            f"match {_quoted(match_id)} is still being played; its record comes at the end",
        )
    row = host.storage.match(match_id)
    if row is None:
        await abort(context, grpc.StatusCode.NOT_FOUND, f"no match {_quoted(match_id)}")
    record = host.storage.record(match_id)
    if record is None:
        await abort(
            context,
            grpc.StatusCode.FAILED_PRECONDITION,
            f"match {_quoted(match_id)} is {row.status} and has no record yet",
        )
    return wire.game_record(match_id, record)


class SpectateService:
    """Spectate: the public view of any match, and its record once ended."""

    def __init__(self, host: Host) -> None:
        self.host = host

    async def Watch(self, request: pb.WatchRequest, context: Context) -> AsyncIterator[bytes]:
        match = self.host.get(request.match_id)
        if match is None:
            _refuse_stream(
                context,
                Refused(
                    grpc.StatusCode.NOT_FOUND,
                    f"no match {_quoted(request.match_id)} is held by this server",
                ),
            )
            return
        structlog.contextvars.bind_contextvars(match=match.id, spectator=True)
        async for message in _stream(match, None, request.after_sequence):
            yield message

    async def GetRecord(self, request: pb.GetRecordRequest, context: Context) -> pb.GameRecord:
        return await _record(self.host, request.match_id, context, so_far=False)


# -- Organiser -------------------------------------------------------------------------


class OrganiserService(pb_grpc.OrganiserServicer):
    """Organiser: create, list and read matches, with the organiser key."""

    def __init__(self, host: Host, organiser_key: str, places: Places) -> None:
        self.host = host
        self.key = organiser_key
        self.places = places

    def _refusal(self, context: Context) -> Refused | None:
        """Returns why the call's organiser key is refused, or None when it is right."""
        key = metadata(context, ORGANISER_KEY)
        if not key:
            return Refused(grpc.StatusCode.UNAUTHENTICATED, f"missing '{ORGANISER_KEY}' metadata")
        if not same_secret(key, self.key):
            return Refused(grpc.StatusCode.PERMISSION_DENIED, f"wrong '{ORGANISER_KEY}'")
        return None

    async def _check(self, context: Context) -> None:
        if (refusal := self._refusal(context)) is not None:
            await abort(context, refusal.code, refusal.message)

    def _create(self, request: pb.CreateMatchRequest) -> pb.CreateMatchResponse:
        """Returns the response to a CreateMatch request; raises Refused."""
        try:
            setup = wire.match_setup(request, NAME_LIMIT)
        except wire.WireError as e:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from e
        try:
            placed = self.places.calls(request.places, setup.players) if request.places else []
        except PlaceError as e:
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION if e.busy else grpc.StatusCode.INVALID_ARGUMENT,
                str(e),
            ) from e
        try:
            match = self.host.create_match(
                setup.players,
                seed=setup.seed,
                colours=setup.colours,
                first_player=setup.first_player,
                deadline_ms=setup.deadline_ms,
                time_bank_ms=setup.time_bank_ms,
                names=setup.names,
            )
        except HostClosed as e:
            raise Refused(grpc.StatusCode.UNAVAILABLE, str(e)) from e
        except (IllegalActionError, ValueError) as e:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from e
        # The last seat taken starts the match, and each place's stream opens with the
        # Snapshot (holding the first decision request, if it is its seat's).
        for seat, call in enumerate(placed):
            call.offer(match, seat)
        return wire.create_response(match.match, match.tokens)

    async def CreateMatch(
        self, request: pb.CreateMatchRequest, context: Context
    ) -> pb.CreateMatchResponse:
        await self._check(context)
        try:
            return self._create(request)
        except Refused as e:
            await abort(context, e.code, e.message)

    async def CreateMatches(
        self, requests: AsyncIterator[pb.CreateMatchRequest], context: Context
    ) -> AsyncIterator[pb.CreateMatchResponse]:
        if (refusal := self._refusal(context)) is not None:
            await _refuse_opening(requests, context, refusal)
            return
        await context.send_initial_metadata(())  # taken up: see PlayMatches
        async for request in requests:
            try:
                response = self._create(request)
            except Refused as e:
                _refuse_stream(context, e)
                return
            yield response

    async def ListMatches(
        self, request: pb.ListMatchesRequest, context: Context
    ) -> pb.ListMatchesResponse:
        await self._check(context)
        limit = min(request.limit or 50, LIST_LIMIT_MAX)
        await self.host.storage.writer.flush()  # list the matches just created, too
        rows = self.host.storage.matches(limit)
        return wire.list_response(rows)

    async def GetRecord(self, request: pb.GetRecordRequest, context: Context) -> pb.GameRecord:
        await self._check(context)
        return await _record(self.host, request.match_id, context, so_far=True)


# -- registration ----------------------------------------------------------------------


def register(server: grpc.aio.Server, host: Host, organiser_key: str, quotas: Quotas) -> list[str]:
    """Returns the full names of the services added to ``server`` (Seat, Spectate,
    Organiser), whose calls keep ``quotas``."""
    places = Places()
    seat = SeatService(host, quotas, places)
    spectate = SpectateService(host)
    kinds = {
        "Join": grpc.unary_unary_rpc_method_handler,
        "Observe": grpc.unary_stream_rpc_method_handler,
        "Act": grpc.unary_unary_rpc_method_handler,
        "Play": grpc.stream_stream_rpc_method_handler,
        "PlayMatches": grpc.stream_stream_rpc_method_handler,
        "Watch": grpc.unary_stream_rpc_method_handler,
        "GetRecord": grpc.unary_unary_rpc_method_handler,
    }
    servicers: dict[str, Any] = {"mammamia.v1.Seat": seat, "mammamia.v1.Spectate": spectate}
    handlers: dict[str, dict[str, grpc.RpcMethodHandler[Any, Any]]] = {
        service: {
            method: kinds[method](getattr(servicers[service], method), parse, serialize)
            for method, (parse, serialize) in methods.items()
        }
        for service, methods in wire.CODECS.items()
    }
    for name, methods in handlers.items():
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, methods),))
        server.add_registered_method_handlers(name, methods)
    pb_grpc.add_OrganiserServicer_to_server(OrganiserService(host, organiser_key, places), server)
    return [*handlers, "mammamia.v1.Organiser"]


Registrar = Callable[[grpc.aio.Server], None]
