"""The gRPC servicers: Seat, Spectate and Organiser. Thin: each method reads its
call (metadata, request), calls plain functions (the match runners,
``server.seating`` for the seats a call takes, ``server.streams`` for what a stream
sends) and turns what they return or raise into a response or a status
(``STATUS_OF``, the one table of it, is in ``server.seating``).

Event streams (Observe, Play, Watch) send ready-made bytes (``server.wire``),
every item pending for a stream joined into one ``SeatEvents`` message, so the
handlers for those methods are registered here with a pass-through serializer
(``register``) instead of the generated helpers.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, Final, NoReturn, TypeAlias

import grpc
import structlog

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from . import seating, streams, wire
from .audit import Audit
from .db.connection import StorageError, storable
from .inputs import token_hash
from .operators import Operators
from .paging import MAX_PAGE_SIZE, BadPageToken, page_size
from .places import Places
from .quotas import Quotas
from .quoting import fitted, quoted
from .runner import Runner
from .runners import Runners
from .seating import STATUS_OF, Refused, Seats
from .streams import Follower, holding, messages
from .visibility import owned_record

log = structlog.get_logger()

SEAT_TOKEN = "seat-token"
ORGANISER_KEY = "organiser-key"
FIRST_MESSAGE_SECONDS = 5.0
"""How long a streaming call refused as it opens (a bad seat token or organiser key)
may take to send its first message."""

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


def metadata(context: Context, key: str) -> str | None:
    """Returns the value of the call's metadata ``key`` as text, or None when absent."""
    for k, v in context.invocation_metadata() or ():
        if k == key:
            return v if isinstance(v, str) else v.decode("utf-8", "replace")
    return None


async def abort(context: Context, code: grpc.StatusCode, message: str) -> NoReturn:
    """Ends the call with ``code`` and ``message`` (cut to fit); never returns."""
    await context.abort(code, fitted(message))
    raise AssertionError("unreachable")  # context.abort raises


def _refuse_stream(context: Context, refusal: Refused) -> None:
    """Ends a streaming call with a status, without sending a message (aborting from
    inside a streaming handler can surface to the client as INTERNAL)."""
    context.set_code(refusal.code)
    context.set_details(fitted(refusal.message))


END_WAIT_SECONDS: Final = 0.05
"""How long the server waits for an ended call's status to go out before it lets go
of the call's handler (see ``_ending``)."""

_ENDS: set[asyncio.Future[Any]] = set()  # the endings under way, kept until done


def _ending(context: Context) -> streams.Ending:
    """Returns how the server ends this streaming call when its match is no longer
    held (``server.streams.Ending``): NOT_FOUND with the message given, then the
    handler's task cancelled, its write pending or not."""
    task = asyncio.current_task()
    assert task is not None

    def end(message: str) -> None:
        ended = asyncio.ensure_future(_end(context, task, message))
        _ENDS.add(ended)
        ended.add_done_callback(_ENDS.discard)

    return end


async def _end(context: Context, task: asyncio.Task[Any], message: str) -> None:
    # The status goes out behind the message being written, which waits for the client
    # to read it (HTTP/2 flow control), maybe for ever: the handler does not wait with
    # it. Cancelled, its stream lets go of the match at once; the status and the one
    # message ahead of it stay with the connection until the client reads or leaves.
    status = asyncio.ensure_future(context.abort(grpc.StatusCode.NOT_FOUND, message))
    _ENDS.add(status)
    status.add_done_callback(_settled)
    await asyncio.wait((status,), timeout=END_WAIT_SECONDS)
    task.cancel()


def _settled(status: asyncio.Future[Any]) -> None:
    """Lets go of an ending's status once sent (its AbortError) or failed."""
    _ENDS.discard(status)
    if not status.cancelled():
        status.exception()


async def _open_stream(context: Context) -> None:
    """Sends the headers of a stream's call before its first message, and sets how the
    server ends it (``_ending``): a status can be queued behind a pending message only
    once the headers have gone."""
    await context.send_initial_metadata(())
    streams.ending.set(_ending(context))


async def _refuse_opening(requests: AsyncIterator[Any], context: Context, refusal: Refused) -> None:
    """Ends a client-streaming call refused as it opens, once its first message has
    come (or after FIRST_MESSAGE_SECONDS): a status sent while the client's first
    message is on its way fails the client's write, which it sees as INTERNAL."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(anext(requests, None), FIRST_MESSAGE_SECONDS)
    _refuse_stream(context, refusal)


def _seat_token(context: Context) -> str:
    """Returns the call's seat token; raises Refused when there is none."""
    token = metadata(context, SEAT_TOKEN)
    if not token:
        raise Refused(
            grpc.StatusCode.UNAUTHENTICATED,
            f"missing '{SEAT_TOKEN}' metadata: send the seat token of your seat",
        )
    return token


# -- Seat ------------------------------------------------------------------------------


class SeatService:
    """Seat: Join, Observe, Act, Play and PlayMatches for the holder of a seat token."""

    def __init__(self, runners: Runners, quotas: Quotas, places: Places) -> None:
        self.seats = Seats(runners, quotas, places)

    async def _seat(self, context: Context) -> tuple[Runner, int]:
        try:
            return self.seats.seat(_seat_token(context), f"'{SEAT_TOKEN}'")
        except Refused as e:
            await abort(context, e.code, e.message)

    async def Join(self, request: pb.JoinRequest, context: Context) -> pb.JoinResponse:
        runner, seat = await self._seat(context)
        try:
            name, client_seed = seating.joining(request.name, request.client_seed)
        except Refused as e:
            await abort(context, e.code, e.message)
        runner.join(seat, name, client_seed)
        return wire.join_response(runner.match, seat)

    async def Observe(self, request: pb.ObserveRequest, context: Context) -> AsyncIterator[bytes]:
        with contextlib.ExitStack() as held:
            try:
                runner, seat = held.enter_context(
                    self.seats.open(_seat_token(context), f"'{SEAT_TOKEN}'")
                )
            except Refused as e:
                _refuse_stream(context, e)
                return
            runner.join(seat)
            await _open_stream(context)
            follower = Follower(seat, holding(request.batch_ms))
            async for message in messages(runner.streams, follower, request.after_sequence):
                yield message

    async def Act(self, request: pb.ActRequest, context: Context) -> pb.ActResponse:
        runner, seat = await self._seat(context)
        ruling = seating.act(runner, seat, request)
        if ruling.accepted:
            try:
                await runner.committed()  # replied to once the answer would survive a crash
            except StorageError as e:
                await abort(
                    context, grpc.StatusCode.UNAVAILABLE, f"the answer could not be stored: {e}"
                )
        if not ruling.accepted:
            assert ruling.refusal is not None
            context.set_trailing_metadata(
                (
                    ("refusal", f"REFUSAL_{ruling.refusal.name}"),
                    *((("rule", fitted(ruling.rule)),) if ruling.rule else ()),
                )
            )
            await abort(context, STATUS_OF[ruling.refusal], ruling.message)
        return wire.act_response(request.decision_id, ruling)

    async def Play(
        self, requests: AsyncIterator[pb.PlayRequest], context: Context
    ) -> AsyncIterator[bytes]:
        with contextlib.ExitStack() as held:
            try:
                runner, seat = held.enter_context(
                    self.seats.open(_seat_token(context), f"'{SEAT_TOKEN}'")
                )
            except Refused as e:
                await _refuse_opening(requests, context, e)
                return
            await _open_stream(context)
            # Closed with the call, not when collected: its reader stops at once.
            play = seating.play(runner, seat, requests, self.seats.quotas.reply_queue)
            try:
                async with contextlib.aclosing(play):
                    async for message in play:
                        yield message
            except Refused as e:
                _refuse_stream(context, e)

    async def PlayMatches(
        self, requests: AsyncIterator[pb.PlayRequest], context: Context
    ) -> AsyncIterator[bytes]:
        # Headers at once: the client knows its call is taken up before it sits.
        await _open_stream(context)
        play = seating.play_matches(self.seats, requests)
        try:
            async with contextlib.aclosing(play):
                async for message in play:
                    yield message
        except Refused as e:
            _refuse_stream(context, e)


# -- Spectate --------------------------------------------------------------------------


async def _record(
    runners: Runners, match_id: str, context: Context, so_far: bool, token: str = ""
) -> pb.GameRecord:
    runner = runners.get(match_id)
    if runner is not None and not runner.ended:
        if so_far:
            return wire.game_record(match_id, runner.record_so_far())
        await abort(
            context,
            grpc.StatusCode.FAILED_PRECONDITION,
            f"match {quoted(match_id)} is still being played; its record comes at the end",
        )
    row = runners.storage.match(match_id) if storable(match_id) else None
    if row is None:
        await abort(context, grpc.StatusCode.NOT_FOUND, f"no match {quoted(match_id)}")
    record = runners.storage.record(match_id)
    if record is None:
        await abort(
            context,
            grpc.StatusCode.FAILED_PRECONDITION,
            f"match {quoted(match_id)} is {row.status} and has no record yet",
        )
    if token:
        # The seat's own notes, for the holder of its token alone.
        hashed = token_hash(token)
        notes = runners.storage.notes(match_id)
        record = owned_record(record, notes, [n.seat for n in notes if n.token_hash == hashed])
    return wire.game_record(match_id, record)


class SpectateService:
    """Spectate: the public view of any match, and its record once ended."""

    def __init__(self, runners: Runners) -> None:
        self.runners = runners

    async def Watch(self, request: pb.WatchRequest, context: Context) -> AsyncIterator[bytes]:
        runner = self.runners.get(request.match_id)
        if runner is None:
            _refuse_stream(
                context,
                Refused(
                    grpc.StatusCode.NOT_FOUND,
                    f"no match {quoted(request.match_id)} is held by this server",
                ),
            )
            return
        structlog.contextvars.bind_contextvars(match=runner.id, spectator=True)
        await _open_stream(context)
        async for message in messages(runner.streams, Follower(None), request.after_sequence):
            yield message

    async def GetRecord(self, request: pb.GetRecordRequest, context: Context) -> pb.GameRecord:
        token = metadata(context, "seat-token") or ""
        return await _record(self.runners, request.match_id, context, so_far=False, token=token)


# -- Organiser -------------------------------------------------------------------------


def operator_of(context: Context, operators: Operators) -> str | Refused:
    """Returns the name of the operator whose key the call's ``organiser-key``
    metadata is, or why the call is refused: UNAUTHENTICATED without the metadata,
    PERMISSION_DENIED for a key that names no operator. The one place a key becomes
    an operator's name (the Organiser, Competition and Admin services)."""
    key = metadata(context, ORGANISER_KEY)
    if not key:
        return Refused(grpc.StatusCode.UNAUTHENTICATED, f"missing '{ORGANISER_KEY}' metadata")
    name = operators.resolve(key)
    if name is None:
        return Refused(grpc.StatusCode.PERMISSION_DENIED, f"wrong '{ORGANISER_KEY}'")
    return name


async def checked_operator(context: Context, operators: Operators) -> str:
    """Returns the call's operator (see :func:`operator_of`); aborts the call when
    its key names none."""
    found = operator_of(context, operators)
    if isinstance(found, Refused):
        await abort(context, found.code, found.message)
    return found


class OrganiserService(pb_grpc.OrganiserServicer):
    """Organiser: create, list and read matches, as an operator; every match
    created is appended to the audit trail."""

    def __init__(
        self, runners: Runners, operators: Operators, places: Places, audit: Audit
    ) -> None:
        self.runners = runners
        self.operators = operators
        self.places = places
        self.audit = audit

    async def _check(self, context: Context) -> str:
        return await checked_operator(context, self.operators)

    def _created(self, who: str, response: pb.CreateMatchResponse) -> pb.CreateMatchResponse:
        runner = self.runners.get(response.match_id)
        players = runner.match.players if runner is not None else len(response.seat_tokens)
        self.audit.send(who, "match.create", response.match_id, "", {"players": players})
        return response

    async def CreateMatch(
        self, request: pb.CreateMatchRequest, context: Context
    ) -> pb.CreateMatchResponse:
        who = await self._check(context)
        try:
            return self._created(who, seating.create_match(self.runners, self.places, request))
        except Refused as e:
            await abort(context, e.code, e.message)

    async def CreateMatches(
        self, requests: AsyncIterator[pb.CreateMatchRequest], context: Context
    ) -> AsyncIterator[pb.CreateMatchResponse]:
        who = operator_of(context, self.operators)
        if isinstance(who, Refused):
            await _refuse_opening(requests, context, who)
            return
        await context.send_initial_metadata(())  # taken up: see PlayMatches
        async for request in requests:
            try:
                response = seating.create_match(self.runners, self.places, request)
            except Refused as e:
                _refuse_stream(context, e)
                return
            yield self._created(who, response)

    async def ListMatches(
        self, request: pb.ListMatchesRequest, context: Context
    ) -> pb.ListMatchesResponse:
        await self._check(context)
        size = page_size(request.page_size or request.limit, 50, MAX_PAGE_SIZE)
        await self.runners.storage.writer.flush()  # list the matches just created, too
        try:
            page = self.runners.storage.matches_page(size, request.page_token)
        except BadPageToken as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        return wire.list_response(page.items, page.next_token)

    async def GetRecord(self, request: pb.GetRecordRequest, context: Context) -> pb.GameRecord:
        await self._check(context)
        return await _record(self.runners, request.match_id, context, so_far=True)


# -- registration ----------------------------------------------------------------------


def register(
    server: grpc.aio.Server, runners: Runners, operators: Operators, quotas: Quotas, audit: Audit
) -> list[str]:
    """Returns the full names of the services added to ``server`` (Seat, Spectate,
    Organiser), whose calls keep ``quotas``; the Organiser's calls are made by
    ``operators`` and its changes appended to ``audit``."""
    places = Places()
    seat = SeatService(runners, quotas, places)
    spectate = SpectateService(runners)
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
    pb_grpc.add_OrganiserServicer_to_server(
        OrganiserService(runners, operators, places, audit), server
    )
    return [*handlers, "mammamia.v1.Organiser"]


Registrar = Callable[[grpc.aio.Server], None]
