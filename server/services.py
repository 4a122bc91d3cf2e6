"""The gRPC servicers: Seat, Spectate and Organiser. Thin: they authenticate, convert
with ``server.wire`` and call the host and its matches.

Event streams (Observe, Play, Watch) send the encoded events of the match's logs
as they are, every event pending for a stream joined into one ``SeatEvents``
message, so the handlers for those methods are registered here with a
pass-through serializer (``register``) instead of the generated helpers.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any, NoReturn, TypeAlias

import grpc
import structlog

from mammamia import IllegalActionError, view_of
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from . import wire
from .host import Host, HostClosed
from .match import NAME_LIMIT, EventLog, Match
from .tokens import same_secret

log = structlog.get_logger()

SEAT_TOKEN = "seat-token"
ORGANISER_KEY = "organiser-key"
LIST_LIMIT_MAX = 1000

Context: TypeAlias = grpc.aio.ServicerContext


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


# -- streams ---------------------------------------------------------------------------


async def _events(match: Match, seat: int | None, after: int,
                  replies: deque[bytes] | None = None,
                  wake: asyncio.Event | None = None) -> AsyncIterator[bytes]:
    """Yields encoded ``SeatEvents`` messages: first a snapshot, the logged events after
    ``after`` and the seat's open decision if it was already sent; then, each time the
    stream is woken (see ``EventLog``), everything pending (``replies`` first, then
    new events) as one message, until the match ends."""
    event_log: EventLog = match.spectators if seat is None else match.seat_logs[seat]
    wake = wake or asyncio.Event()
    event_log.listeners.add(wake)
    try:
        entries = event_log.entries
        cursor = len(entries)
        view = wire.view_bytes(view_of(match.state, seat, history=False), match.names)
        first = [wire.entry(wire.frame(cursor, wire.snapshot_body(view, match.id))),
                 *entries[min(after, cursor):cursor]]
        if seat is not None:
            again = match.open_decision_for(seat)
            if again is not None and again[0] <= after:
                first.append(again[1])
        yield b"".join(first)
        while True:
            wake.clear()
            pending: list[bytes] = []
            while replies:
                pending.append(replies.popleft())
            if cursor < len(entries):
                pending += entries[cursor:]
                cursor = len(entries)
            if pending:
                yield b"".join(pending)
            elif event_log.closed:
                return
            else:
                await wake.wait()
    finally:
        event_log.listeners.discard(wake)


# -- Seat ------------------------------------------------------------------------------


class SeatService:
    """Seat: Join, Observe, Act and Play for the holder of a seat token."""

    def __init__(self, host: Host) -> None:
        self.host = host

    async def _seat(self, context: Context) -> tuple[Match, int]:
        token = metadata(context, SEAT_TOKEN)
        if not token:
            await abort(context, grpc.StatusCode.UNAUTHENTICATED,
                         f"missing '{SEAT_TOKEN}' metadata: send the seat token of your seat")
        found = self.host.seat_of(token)
        if found is None and (gone := self.host.retired(token)) is not None:
            await abort(context, grpc.StatusCode.NOT_FOUND,
                         f"match {gone!r} has ended and is no longer held by this server; "
                         f"its record is in Spectate.GetRecord")
        if found is None:
            await abort(context, grpc.StatusCode.UNAUTHENTICATED,
                         f"unknown '{SEAT_TOKEN}': no seat of a match on this server has it")
        # Every line logged for this call names the match and the seat.
        structlog.contextvars.bind_contextvars(match=found[0].id, seat=found[1])
        return found

    async def Join(self, request: pb.JoinRequest, context: Context) -> pb.JoinResponse:
        match, seat = await self._seat(context)
        if len(request.name) > NAME_LIMIT:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT,
                         f"name: at most {NAME_LIMIT} characters, got {len(request.name)}")
        match.join(seat, request.name)
        return pb.JoinResponse(match_id=match.id, seat=seat, colour=match.state.colours[seat],
                               players=match.players, deadline_ms=match.settings.deadline_ms)

    async def Observe(self, request: pb.ObserveRequest, context: Context
                      ) -> AsyncIterator[bytes]:
        match, seat = await self._seat(context)
        match.join(seat)
        async for message in _events(match, seat, request.after_sequence):
            yield message

    async def Act(self, request: pb.ActRequest, context: Context) -> pb.ActResponse:
        match, seat = await self._seat(context)
        code, message = _act(match, seat, request)
        if code is not grpc.StatusCode.OK:
            await abort(context, code, message)
        return pb.ActResponse(decision_id=request.decision_id)

    async def Play(self, requests: AsyncIterator[pb.PlayRequest], context: Context
                   ) -> AsyncIterator[bytes]:
        match, seat = await self._seat(context)
        first = await _first(requests)
        if first is None or first.WhichOneof("message") != "observe":
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT,
                         "the first message of Play must carry 'observe'")
        match.join(seat)
        replies: deque[bytes] = deque()
        wake = asyncio.Event()

        async def read() -> None:
            async for req in requests:
                if req.WhichOneof("message") == "act":
                    code, message = _act(match, seat, req.act)
                    decision_id = req.act.decision_id
                else:
                    code, message = (grpc.StatusCode.INVALID_ARGUMENT,
                                     "after the first message, Play takes only 'act'")
                    decision_id = ""
                replies.append(wire.entry(wire.act_result(decision_id, code.value[0],
                                                          message)))
                # A refusal goes at once, for the seat may answer again; an accepted
                # answer goes with the events it caused, which wake the stream soon.
                if code is not grpc.StatusCode.OK:
                    wake.set()

        reader = asyncio.ensure_future(read())
        try:
            async for message in _events(match, seat, first.observe.after_sequence,
                                         replies, wake):
                yield message
        finally:
            reader.cancel()


async def _first(requests: AsyncIterator[pb.PlayRequest]) -> pb.PlayRequest | None:
    async for req in requests:
        return req
    return None


def _act(match: Match, seat: int, request: pb.ActRequest) -> tuple[grpc.StatusCode, str]:
    """Returns the status code and message of an answer after offering it to the match."""
    try:
        decision_id, option, action = wire.answer_of(request)
    except wire.WireError as e:
        return grpc.StatusCode.INVALID_ARGUMENT, str(e)
    answer = match.answer(seat, decision_id, option, action)
    return answer.code, answer.message


# -- Spectate --------------------------------------------------------------------------


async def _record(host: Host, match_id: str, context: Context, so_far: bool) -> pb.GameRecord:
    match = host.get(match_id)
    if match is not None and not match.ended:
        if so_far:
            return pb.GameRecord(match_id=match_id, json=match.record_so_far())
        await abort(context, grpc.StatusCode.FAILED_PRECONDITION,
                     f"match {match_id!r} is still being played; its record comes at the end")
    row = host.storage.match(match_id)
    if row is None:
        await abort(context, grpc.StatusCode.NOT_FOUND, f"no match {match_id!r}")
    record = host.storage.record(match_id)
    if record is None:
        await abort(context, grpc.StatusCode.FAILED_PRECONDITION,
                     f"match {match_id!r} is {row.status} and has no record yet")
    return pb.GameRecord(match_id=match_id, json=record)


class SpectateService:
    """Spectate: the public view of any match, and its record once ended."""

    def __init__(self, host: Host) -> None:
        self.host = host

    async def Watch(self, request: pb.WatchRequest, context: Context) -> AsyncIterator[bytes]:
        match = self.host.get(request.match_id)
        if match is None:
            await abort(context, grpc.StatusCode.NOT_FOUND,
                         f"no match {request.match_id!r} is held by this server")
        structlog.contextvars.bind_contextvars(match=match.id, spectator=True)
        async for message in _events(match, None, request.after_sequence):
            yield message

    async def GetRecord(self, request: pb.GetRecordRequest, context: Context) -> pb.GameRecord:
        return await _record(self.host, request.match_id, context, so_far=False)


# -- Organiser -------------------------------------------------------------------------


class OrganiserService:
    """Organiser: create, list and read matches, with the organiser key."""

    def __init__(self, host: Host, organiser_key: str) -> None:
        self.host = host
        self.key = organiser_key

    async def _check(self, context: Context) -> None:
        key = metadata(context, ORGANISER_KEY)
        if not key:
            await abort(context, grpc.StatusCode.UNAUTHENTICATED,
                         f"missing '{ORGANISER_KEY}' metadata")
        if not same_secret(key, self.key):
            await abort(context, grpc.StatusCode.PERMISSION_DENIED,
                         f"wrong '{ORGANISER_KEY}'")

    async def CreateMatch(self, request: pb.CreateMatchRequest, context: Context
                          ) -> pb.CreateMatchResponse:
        await self._check(context)
        try:
            setup = wire.match_setup(request, NAME_LIMIT)
        except wire.WireError as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        try:
            match = self.host.create_match(
                setup.players, seed=setup.seed, colours=setup.colours,
                first_player=setup.first_player, deadline_ms=setup.deadline_ms,
                time_bank_ms=setup.time_bank_ms, names=setup.names)
        except HostClosed as e:
            await abort(context, grpc.StatusCode.UNAVAILABLE, str(e))
        except (IllegalActionError, ValueError) as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        return pb.CreateMatchResponse(match_id=match.id, seat_tokens=match.tokens)

    async def ListMatches(self, request: pb.ListMatchesRequest, context: Context
                          ) -> pb.ListMatchesResponse:
        await self._check(context)
        limit = min(request.limit or 50, LIST_LIMIT_MAX)
        await self.host.storage.writer.flush()     # list the matches just created, too
        rows = self.host.storage.matches(limit)
        return pb.ListMatchesResponse(matches=[wire.match_summary(r) for r in rows])

    async def GetRecord(self, request: pb.GetRecordRequest, context: Context) -> pb.GameRecord:
        await self._check(context)
        return await _record(self.host, request.match_id, context, so_far=True)


# -- registration ----------------------------------------------------------------------


def _raw(message: Any) -> bytes:
    """Serializes a response that may already be encoded."""
    return message if isinstance(message, bytes) else message.SerializeToString()


def register(server: grpc.aio.Server, host: Host, organiser_key: str) -> list[str]:
    """Returns the full names of the services added to ``server`` (Seat, Spectate, Organiser)."""
    seat = SeatService(host)
    spectate = SpectateService(host)
    handlers: dict[str, dict[str, grpc.RpcMethodHandler]] = {
        "mammamia.v1.Seat": {
            "Join": grpc.unary_unary_rpc_method_handler(
                seat.Join, pb.JoinRequest.FromString, pb.JoinResponse.SerializeToString),
            "Observe": grpc.unary_stream_rpc_method_handler(
                seat.Observe, pb.ObserveRequest.FromString, _raw),
            "Act": grpc.unary_unary_rpc_method_handler(
                seat.Act, pb.ActRequest.FromString, pb.ActResponse.SerializeToString),
            "Play": grpc.stream_stream_rpc_method_handler(
                seat.Play, pb.PlayRequest.FromString, _raw),
        },
        "mammamia.v1.Spectate": {
            "Watch": grpc.unary_stream_rpc_method_handler(
                spectate.Watch, pb.WatchRequest.FromString, _raw),
            "GetRecord": grpc.unary_unary_rpc_method_handler(
                spectate.GetRecord, pb.GetRecordRequest.FromString,
                pb.GameRecord.SerializeToString),
        },
    }
    for name, methods in handlers.items():
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, methods),))
        server.add_registered_method_handlers(name, methods)
    pb_grpc.add_OrganiserServicer_to_server(OrganiserService(host, organiser_key), server)
    return [*handlers, "mammamia.v1.Organiser"]


Registrar = Callable[[grpc.aio.Server], None]
