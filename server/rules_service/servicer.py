"""The Rules servicer and ``create_server``: thin methods over ``States``.

Each method reads its request through ``wire``, calls ``States`` and answers
through ``wire``; the errors of ``States`` become statuses here, in one place.
Calls run on the event loop one at a time, so the table needs no lock and a
playout (milliseconds) holds the loop only while it plays.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeVar

import grpc
import grpc.aio
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from mammamia_pb import rules_pb2 as rpb
from mammamia_pb import rules_pb2_grpc as rpb_grpc

from ..guards import Guards
from ..quoting import fitted
from . import wire
from .errors import BadRequest, RulesServiceError, TooManyStates, UnknownHandle
from .policies import PolicyFactory
from .states import States

log = structlog.get_logger()

SERVICE: Final = "mammamia.v1.Rules"
MESSAGE_LIMIT: Final = 4 * 1024 * 1024
"""The largest request accepted (a long game's knowledge is tens of kilobytes)."""

_CODES: Final = {
    BadRequest: grpc.StatusCode.INVALID_ARGUMENT,
    UnknownHandle: grpc.StatusCode.NOT_FOUND,
    TooManyStates: grpc.StatusCode.RESOURCE_EXHAUSTED,
}

_Reply = TypeVar("_Reply")
Context = grpc.aio.ServicerContext[Any, Any]


async def _answer(context: Context, method: str, call: Callable[[], _Reply]) -> _Reply:
    """Returns ``call()``; aborts the call with the status of a RulesServiceError."""
    try:
        return call()
    except RulesServiceError as e:
        code = _CODES.get(type(e), grpc.StatusCode.INVALID_ARGUMENT)
        reason = fitted(str(e))
        log.debug("rules_call_refused", method=method, code=code.name, reason=reason)
        await context.abort(code, reason)
        raise  # abort raises; this keeps type checkers content


class RulesServicer(rpb_grpc.RulesServicer):
    """The Rules service over one table of states."""

    def __init__(self, states: States) -> None:
        self.states = states

    async def NewGame(self, request: rpb.NewGameRequest, context: Context) -> rpb.StateReply:
        def call() -> rpb.StateReply:
            return wire.state_reply(*self.states.new_game(*wire.new_game_args(request)))

        return await _answer(context, "NewGame", call)

    async def FromRecord(self, request: rpb.FromRecordRequest, context: Context) -> rpb.StateReply:
        def call() -> rpb.StateReply:
            return wire.state_reply(
                *self.states.from_record(request.record_json, wire.optional_actions(request))
            )

        return await _answer(context, "FromRecord", call)

    async def Determinize(
        self, request: rpb.DeterminizeRequest, context: Context
    ) -> rpb.DeterminizeResponse:
        def call() -> rpb.DeterminizeResponse:
            which = request.WhichOneof("source")
            if which == "knowledge":
                view = wire.knowledge_view(request.knowledge)
            elif which == "record":
                r = request.record
                view = self.states.record_view(r.record_json, r.seat, wire.optional_actions(r))
            else:
                raise BadRequest("set 'knowledge' or 'record'")
            return wire.determinize_response(
                self.states.determinize(view, request.seed, request.count or 1)
            )

        return await _answer(context, "Determinize", call)

    async def Legal(self, request: rpb.LegalRequest, context: Context) -> rpb.LegalResponse:
        return await _answer(
            context, "Legal", lambda: wire.legal_response(*self.states.legal(request.handle))
        )

    async def Apply(self, request: rpb.ApplyRequest, context: Context) -> rpb.ApplyResponse:
        def call() -> rpb.ApplyResponse:
            option, action = wire.apply_choice(request)
            return wire.apply_response(
                self.states.apply(request.handle, option, action, request.fork)
            )

        return await _answer(context, "Apply", call)

    async def Clone(self, request: rpb.CloneRequest, context: Context) -> rpb.StateReply:
        return await _answer(
            context, "Clone", lambda: wire.state_reply(*self.states.clone(request.handle))
        )

    async def GetView(self, request: rpb.GetViewRequest, context: Context) -> rpb.GetViewResponse:
        def call() -> rpb.GetViewResponse:
            seat = request.seat if request.HasField("seat") else None
            return wire.view_response(self.states.get(request.handle), seat, request.history)

        return await _answer(context, "GetView", call)

    async def Playout(self, request: rpb.PlayoutRequest, context: Context) -> rpb.PlayoutResponse:
        def call() -> rpb.PlayoutResponse:
            option, action = wire.playout_first(request)
            return wire.playout_response(
                self.states.playout(
                    request.handle, list(request.policies), request.seed, option, action
                )
            )

        return await _answer(context, "Playout", call)

    async def Release(self, request: rpb.ReleaseRequest, context: Context) -> rpb.ReleaseResponse:
        def call() -> rpb.ReleaseResponse:
            released = self.states.release(request.handles)
            return wire.release_response(released, len(self.states))

        return await _answer(context, "Release", call)


class _Timing(grpc.aio.ServerInterceptor):
    """Logs each call's method and time at debug level (``--log-level debug``)."""

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        """Returns the method's handler, timed when it is a unary call."""
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner: Any = handler.unary_unary
        method = (handler_call_details.method or "").rsplit("/", 1)[-1]

        async def timed(request: Any, context: Context) -> Any:
            started = time.perf_counter()
            try:
                reply = inner(request, context)
                return await reply if hasattr(reply, "__await__") else reply
            finally:
                log.debug(
                    "rules_call", method=method, ms=round((time.perf_counter() - started) * 1000, 3)
                )

        return grpc.unary_unary_rpc_method_handler(
            timed, handler.request_deserializer, handler.response_serializer
        )


async def create_server(
    address: str, *, max_states: int, policies: Mapping[str, PolicyFactory], debug: bool = False
) -> tuple[grpc.aio.Server, int, States]:
    """Returns (server, bound port, its states) for the Rules service at ``address``
    (port 0: any free one), with the health and reflection services, not started.
    Raises RuntimeError when the address cannot be bound."""
    interceptors: list[grpc.aio.ServerInterceptor] = [Guards()]
    if debug:
        interceptors.append(_Timing())
    server = grpc.aio.server(
        interceptors=interceptors,
        options=[
            ("grpc.max_receive_message_length", MESSAGE_LIMIT),
            ("grpc.so_reuseport", 0),
        ],
    )
    states = States(max_states, policies)
    rpb_grpc.add_RulesServicer_to_server(RulesServicer(states), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    health_servicer.set(SERVICE, health_pb2.HealthCheckResponse.SERVING)
    health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection(
        (SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    port = server.add_insecure_port(address)
    return server, port, states
