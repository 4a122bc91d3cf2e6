"""Taking seats and playing them over a call: Observe's and Play's seat, PlayMatches'
seats one match after another, and places (``server.places``) an organiser seats.

``Seats`` finds a seat by its token and counts its open streams (a seat holds at
most ``Quotas.streams_per_seat``). ``play`` and ``play_matches`` are the Play and
PlayMatches calls as plain async generators: they read the client's messages with
one task for the whole call (``PlayCall``), hand each answer to the match's runner
and queue its reply on the seat's stream (``server.streams``), and yield the
stream's encoded messages. ``create_match`` is an organiser's CreateMatch, which
seats the places it names. What refuses a call is raised as ``Refused``, with the
gRPC status code the servicer ends the call with.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Final, TypeAlias

import grpc
import structlog

from mammamia import IllegalActionError
from mammamia.fairness import check_client_seed
from mammamia_pb import arena_pb2 as pb

from . import wire
from .answers import Refusal, Ruling, refused
from .match import NAME_LIMIT
from .notes import fitted_note
from .places import PlaceError, Places
from .quotas import Quotas
from .quoting import fitted, quoted
from .runner import Runner
from .runners import Draining, Runners
from .streams import HOLD_SECONDS, Follower, Replies, holding, messages

log = structlog.get_logger()

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
"""The gRPC status code of each ruling on an answer (None: accepted), as arena.proto
lists: the one table of it, for Act's status and Play's ``ActResult.code``."""


class Refused(Exception):
    """A call refused: its status code and message."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def joining(name: str, client_seed: str, prefix: str = "") -> tuple[str, str]:
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


def act(runner: Runner, seat: int, request: pb.ActRequest) -> Ruling:
    """Returns the ruling on an answer after offering it to the match."""
    try:
        decision_id, option, action = wire.answer_of(request)
    except wire.WireError as e:
        return refused(Refusal.MALFORMED, str(e))
    return runner.answer(seat, decision_id, option, action, fitted_note(request.note))


def create_match(
    runners: Runners, places: Places, request: pb.CreateMatchRequest
) -> pb.CreateMatchResponse:
    """Returns the response to an organiser's CreateMatch request, the match created
    and the places it names seated; raises Refused."""
    try:
        setup = wire.match_setup(request, NAME_LIMIT)
    except wire.WireError as e:
        raise Refused(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from e
    try:
        placed = places.calls(request.places, setup.players) if request.places else []
    except PlaceError as e:
        raise Refused(
            grpc.StatusCode.FAILED_PRECONDITION if e.busy else grpc.StatusCode.INVALID_ARGUMENT,
            str(e),
        ) from e
    try:
        runner = runners.create_match(
            setup.players,
            seed=setup.seed,
            colours=setup.colours,
            first_player=setup.first_player,
            deadline_ms=setup.deadline_ms,
            time_bank_ms=setup.time_bank_ms,
            names=setup.names,
        )
    except Draining as e:
        raise Refused(grpc.StatusCode.UNAVAILABLE, str(e)) from e
    except (IllegalActionError, ValueError) as e:
        raise Refused(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from e
    # The last seat taken starts the match, and each place's stream opens with the
    # Snapshot (holding the first decision request, if it is its seat's).
    for seat, call in enumerate(placed):
        call.offer(runner, seat)
    return wire.create_response(runner.match, runner.tokens)


@dataclass(frozen=True, slots=True)
class Taken:
    """A seat taken and joined: where its stream starts (``after``), its hold, and
    the open-stream count it holds until its stream ends (``held``)."""

    runner: Runner
    seat: int
    after: int
    hold: float
    held: contextlib.ExitStack


class Seats:
    """The seats of a server's matches as calls take them: found by token, each with
    its open Observe and Play streams counted."""

    def __init__(self, runners: Runners, quotas: Quotas, places: Places) -> None:
        self.runners = runners
        self.quotas = quotas
        self.places = places
        self._streams: dict[tuple[str, int], int] = {}  # open Observe and Play per seat

    def seat(self, token: str, named: str) -> tuple[Runner, int]:
        """Returns (runner, seat) of ``token`` (the input ``named``); raises Refused."""
        found = self.runners.seat_of(token)
        if found is None and (gone := self.runners.retired(token)) is not None:
            raise Refused(
                grpc.StatusCode.NOT_FOUND,
                f"match {quoted(gone)} has ended and is no longer held by this server; "
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
    def streaming(self, runner: Runner, seat: int) -> Iterator[None]:
        """Counts one open Observe or Play stream of ``seat`` while inside; raises
        Refused when the seat holds its limit of open streams already."""
        key = (runner.id, seat)
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

    @contextlib.contextmanager
    def open(self, token: str, named: str) -> Iterator[tuple[Runner, int]]:
        """Yields (runner, seat) of ``token``, counting one open stream of the seat
        while inside; raises Refused."""
        runner, seat = self.seat(token, named)
        with self.streaming(runner, seat):
            yield runner, seat

    def take(self, sit: pb.SitRequest) -> Taken:
        """Returns the seat a PlayMatches ``sit`` takes, joined; raises Refused.

        Called by the call's reader as the sit is read, not by the handler once it is
        woken: on a busy server every hand-off between tasks waits its turn of the
        event loop, and the seat that completes a match starts it at once."""
        runner, seat = self.seat(sit.seat_token, "sit.seat_token")
        name, client_seed = joining(sit.name, sit.client_seed, "sit.")
        return self._joined(
            runner, seat, name, client_seed, sit.after_sequence, holding(sit.batch_ms)
        )

    def take_placed(self, runner: Runner, seat: int, name: str, hold: float) -> Taken:
        """Returns the seat an organiser gave a place, joined with the place's name (""
        keeps the seat's); raises Refused."""
        return self._joined(runner, seat, name or None, None, 0, hold)

    def _joined(
        self,
        runner: Runner,
        seat: int,
        name: str | None,
        client_seed: str | None,
        after: int,
        hold: float,
    ) -> Taken:
        """Returns ``seat`` taken and joined, holding one of its open streams; raises
        Refused when it holds its limit of them already."""
        held = contextlib.ExitStack()
        held.enter_context(self.streaming(runner, seat))
        runner.join(seat, name, client_seed)
        return Taken(runner, seat, after, hold, held)


@dataclass(frozen=True, slots=True)
class Sitting:
    """The seat a Play or PlayMatches call plays now: its match, its replies not yet
    sent, and its stream's follower."""

    runner: Runner
    seat: int
    replies: Replies
    follower: Follower


Seated: TypeAlias = tuple[Taken, Sitting] | Refused | str
"""What a PlayMatches ``sit`` came to: the seat taken and its place on the call, or
why the call ends; or, after a ``wait``, the token of the place the call has become."""


async def play(
    runner: Runner, seat: int, requests: AsyncIterator[pb.PlayRequest], reply_limit: int
) -> AsyncGenerator[bytes, None]:
    """Yields the messages of a Play call of ``seat``, whose stream is counted already;
    raises Refused when the call must end with a status."""
    try:
        first = await anext(requests, None)
    except Exception as e:  # bytes that do not decode as a PlayRequest
        raise Refused(
            grpc.StatusCode.INVALID_ARGUMENT,
            "the first Play message could not be read as a PlayRequest",
        ) from e
    if first is None or first.WhichOneof("message") != "observe":
        raise Refused(
            grpc.StatusCode.INVALID_ARGUMENT, "the first message of Play must carry 'observe'"
        )
    runner.join(seat)
    call = PlayCall(requests, reply_limit, "Play")
    try:
        async for message in call.sit(
            runner, seat, first.observe.after_sequence, holding(first.observe.batch_ms)
        ):
            yield message
        if call.failed:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, call.failed)
    finally:
        call.close()


async def play_matches(
    seats: Seats, requests: AsyncIterator[pb.PlayRequest]
) -> AsyncGenerator[bytes, None]:
    """Yields the messages of a PlayMatches call: each seat's stream in turn, and a
    place's token; raises Refused when the call must end with a status."""
    call = PlayCall(requests, seats.quotas.reply_queue, "PlayMatches", seats)
    try:
        while (seated := await call.next_sit()) is not None:
            if isinstance(seated, Refused):
                raise seated
            if isinstance(seated, str):  # the call is a place: its token
                yield wire.waiting(seated)
                continue
            taken, sitting = seated
            structlog.contextvars.bind_contextvars(match=taken.runner.id, seat=taken.seat)
            try:
                with taken.held:
                    async for message in call.sit(
                        taken.runner, taken.seat, taken.after, taken.hold, sitting
                    ):
                        yield message
            finally:
                structlog.contextvars.unbind_contextvars("match", "seat")
        if call.failed:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, call.failed)
    finally:
        call.close()


class PlayCall:
    """The client's side of a Play or PlayMatches call, read by one task for the
    whole call (a read is never cancelled midway, so no message is lost between two
    matches): answers go to the seat in play, and, on PlayMatches, each ``sit``
    between matches takes its seat (``Seats.take``) and waits for :meth:`next_sit`;
    or, once a ``wait`` has made the call a place, an organiser's CreateMatch seats
    it (:meth:`offer`, see ``server.places``)."""

    def __init__(
        self,
        requests: AsyncIterator[pb.PlayRequest],
        reply_limit: int,
        method: str,
        seats: Seats | None = None,
    ) -> None:
        self._requests = requests
        self._reply_limit = reply_limit
        self._method = method
        self._seats = seats  # (PlayMatches)
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

    def offer(self, runner: Runner, seat: int) -> None:
        """Seats the place in ``seat`` of ``runner``'s match: at once between matches,
        else once the match in play has ended (the handler takes it then, see
        next_sit)."""
        self._offered = (runner, seat)
        if self._between():
            self._take_offered()

    def _between(self) -> bool:
        sitting = self._sitting
        return sitting is None or sitting.runner.match.ended is not None

    def _take_offered(self) -> None:
        assert self._offered is not None and self._seats is not None
        runner, seat = self._offered
        self._offered = None
        try:
            taken = self._seats.take_placed(runner, seat, self._place_name, self._place_hold)
        except Refused as e:
            self._sits.put_nowait(e)
            return
        self._seated(taken)

    def _sat(self, runner: Runner, seat: int, hold: float) -> Sitting:
        replies = Replies(self._reply_limit)
        sitting = self._sitting = Sitting(runner, seat, replies, Follower(seat, hold, replies))
        return sitting

    async def sit(
        self,
        runner: Runner,
        seat: int,
        after: int,
        hold: float = HOLD_SECONDS,
        sitting: Sitting | None = None,
    ) -> AsyncIterator[bytes]:
        """Yields the messages of ``seat``'s stream until its match's end has been sent,
        answering the acts that come meanwhile (``hold``: see ``server.streams``). The
        caller has taken the seat (``Runner.join``); ``sitting`` is its place on the
        call, if the reader made it already."""
        if sitting is None:
            sitting = self._sat(runner, seat, hold)
        self._start()
        try:
            async for message in messages(runner.streams, sitting.follower, after):
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
            assert self._seats is not None
            self._seats.places.remove(self._place)
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
            log.warning("play_read_failed", error=fitted(f"{type(e).__name__}: {e}"))
            self._fail(f"a {self._method} message could not be read as a PlayRequest")

    def _fail(self, why: str) -> None:
        self.failed = self.failed or why
        self._sits.put_nowait(None)
        if self._sitting is not None:
            self._sitting.follower.stop()

    async def _read_all(self) -> None:
        while True:
            if self._sitting is not None:
                await self._sitting.replies.room()
            req = await anext(self._requests, None)
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
        assert self._seats is not None
        try:
            taken = self._seats.take(sit)
        except Refused as e:
            self._sits.put_nowait(e)
            return False
        self._seated(taken)
        return True

    def _seated(self, taken: Taken) -> None:
        # Every later message meets this seat, from the moment it is taken.
        sitting = self._sat(taken.runner, taken.seat, taken.hold)
        self._sits.put_nowait((taken, sitting))

    def _wait(self, wait: pb.WaitRequest) -> bool:
        """Makes the call a place and hands its token to the call's handler; returns
        False when the wait is refused (the handler ends the call with the refusal)."""
        assert self._seats is not None
        try:
            self._place_name, _ = joining(wait.name, "", "wait.")
        except Refused as e:
            self._sits.put_nowait(e)
            return False
        self._place_hold = holding(wait.batch_ms)
        self._place = self._seats.places.add(self)
        self._sits.put_nowait(self._place)
        return True

    def _answer(self, sitting: Sitting, req: pb.PlayRequest, kind: str | None) -> None:
        runner = sitting.runner
        # The reply goes out ahead of what the answer caused: the log entries
        # appended from this length on.
        position = len(runner.match.log)
        if kind == "act":
            ruling = act(runner, sitting.seat, req.act)
            decision_id = req.act.decision_id
        else:
            ruling = refused(
                Refusal.MALFORMED,
                "after the first message, Play takes only 'act'"
                if self._method == "Play"
                else "while a match is in "
                "play, PlayMatches takes only 'act' (the next 'sit' goes after "
                "match_ended)",
            )
            decision_id = ""
        reply = wire.act_result(decision_id, ruling, STATUS_OF[ruling.refusal].value[0])
        runner.streams.reply(sitting.follower, position, reply, ruling.accepted)
