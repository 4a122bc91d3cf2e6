"""Checks every unary-request call passes before its servicer runs: bytes that do not
decode, and calls over their address's rate.

gRPC decodes a request with the method's deserializer before the servicer runs, and
a deserializer that raises (bad UTF-8, a truncated field, nesting past protobuf's
limit) ends the call as UNKNOWN with the Python exception's class in the message,
which tells a client to retry. :class:`Guards` wraps each unary-request method so
that an undecodable request is marked instead, and the call is refused with
INVALID_ARGUMENT naming the message type and nothing of the server. Streamed
requests (Play) are checked where they are read (``server.services``).

The calls anyone may make without a key (Register, and the read calls of Spectate
and Ladder) are counted per client address (:class:`server.quotas.Rates`); one over
its rate is refused with RESOURCE_EXHAUSTED and a ``retry-after-ms`` trailer.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import grpc
import grpc.aio

from .quotas import Rates, address_of

RATE_KINDS: Final = {
    "/mammamia.v1.Ladder/Register": "register",
    "/mammamia.v1.Ladder/Standings": "public",
    "/mammamia.v1.Ladder/Matches": "public",
    "/mammamia.v1.Ladder/Results": "public",
    "/mammamia.v1.Ladder/GetRecord": "public",
    "/mammamia.v1.Ladder/BotStats": "public",
    "/mammamia.v1.Ladder/Scrimmages": "public",
    "/mammamia.v1.Spectate/Watch": "public",
    "/mammamia.v1.Spectate/GetRecord": "public",
}
"""The rate each unauthenticated method is counted against (others are not counted)."""

RETRY_AFTER: Final = "retry-after-ms"


class Undecodable:
    """A request whose bytes did not decode."""

    __slots__ = ()


UNDECODABLE = Undecodable()


def _marking(parse: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def parse_or_mark(data: bytes) -> Any:
        try:
            return parse(data)
        except Exception:  # DecodeError, RecursionError on deep nesting, ...
            return UNDECODABLE

    return parse_or_mark


class _Refusal:
    """Why a call is refused before its servicer runs: status, message, trailers."""

    __slots__ = ("code", "message", "trailers")

    def __init__(
        self, code: grpc.StatusCode, message: str, trailers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        self.code = code
        self.message = message
        self.trailers = trailers


class Guards(grpc.aio.ServerInterceptor):
    """Refuses undecodable unary requests with INVALID_ARGUMENT, and unauthenticated
    calls over their address's rate (``rates``; none when None) with RESOURCE_EXHAUSTED."""

    def __init__(self, rates: Rates | None = None) -> None:
        self.rates = rates

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        """Returns the method's handler, wrapped when its request is unary."""
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_streaming or handler.request_deserializer is None:
            return handler
        method = handler_call_details.method or ""
        name = method.rsplit("/", 1)[-1] or "this method"
        undecodable = _Refusal(
            grpc.StatusCode.INVALID_ARGUMENT, f"the request of {name} could not be decoded"
        )
        kind = RATE_KINDS.get(method) if self.rates is not None else None

        def refusal(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> _Refusal | None:
            if request is UNDECODABLE:
                return undecodable
            if kind is None or self.rates is None:
                return None
            wait = self.rates.refuse(kind, address_of(context.peer()))
            if wait is None:
                return None
            return _Refusal(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"too many {name} calls from this address (at most "
                f"{self.rates.describe(kind)}); retry in {wait:.1f} s",
                ((RETRY_AFTER, str(max(1, round(wait * 1000)))),),
            )

        parse = _marking(handler.request_deserializer)
        if handler.unary_unary is not None:
            # The stubs type behaviours for the synchronous server; these run on grpc.aio.
            unary: Any = handler.unary_unary

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
                refused = refusal(request, context)
                if refused is not None:
                    await context.abort(refused.code, refused.message, refused.trailers)
                reply = unary(request, context)
                # Some servicers (the health service's) are plain functions.
                return await reply if inspect.isawaitable(reply) else reply

            return grpc.unary_unary_rpc_method_handler(
                unary_unary, parse, handler.response_serializer
            )
        if handler.unary_stream is not None and inspect.isasyncgenfunction(handler.unary_stream):
            stream: Any = handler.unary_stream

            async def unary_stream(
                request: Any, context: grpc.aio.ServicerContext[Any, Any]
            ) -> AsyncIterator[Any]:
                refused = refusal(request, context)
                if refused is not None:
                    # A status set without aborting: aborting from inside a streaming
                    # handler can surface to the client as INTERNAL.
                    context.set_code(refused.code)
                    context.set_details(refused.message)
                    context.set_trailing_metadata(refused.trailers)
                    return
                async for reply in stream(request, context):
                    yield reply

            return grpc.unary_stream_rpc_method_handler(
                unary_stream, parse, handler.response_serializer
            )
        return handler
