"""Requests whose bytes do not decode get INVALID_ARGUMENT, on every service.

gRPC decodes a request with the method's deserializer before the servicer runs, and
a deserializer that raises (bad UTF-8, a truncated field, nesting past protobuf's
limit) ends the call as UNKNOWN with the Python exception's class in the message,
which tells a client to retry. This interceptor wraps each unary-request method so
that an undecodable request is marked instead, and the call is refused with
INVALID_ARGUMENT naming the message type and nothing of the server. Streamed
requests (Play) are checked where they are read (``server.services``).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import grpc.aio


class Undecodable:
    """A request whose bytes did not decode."""

    __slots__ = ()


UNDECODABLE = Undecodable()


def _marking(parse: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def parse_or_mark(data: bytes) -> Any:
        try:
            return parse(data)
        except Exception:           # DecodeError, RecursionError on deep nesting, ...
            return UNDECODABLE
    return parse_or_mark


def _what(details: grpc.HandlerCallDetails) -> str:
    method = details.method or ""
    return f"the request of {method.rsplit('/', 1)[-1] or 'this method'} could not be decoded"


class RefuseUndecodable(grpc.aio.ServerInterceptor):
    """Refuses undecodable unary requests with INVALID_ARGUMENT."""

    async def intercept_service(
            self, continuation: Callable[[grpc.HandlerCallDetails],
                                         Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
            handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        """Returns the method's handler, wrapped when its request is unary."""
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_streaming or handler.request_deserializer is None:
            return handler
        parse = _marking(handler.request_deserializer)
        message = _what(handler_call_details)
        if handler.unary_unary is not None:
            # The stubs type behaviours for the synchronous server; these run on grpc.aio.
            unary: Any = handler.unary_unary

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]
                                  ) -> Any:
                if request is UNDECODABLE:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
                reply = unary(request, context)
                # Some servicers (the health service's) are plain functions.
                return await reply if inspect.isawaitable(reply) else reply

            return grpc.unary_unary_rpc_method_handler(unary_unary, parse,
                                                       handler.response_serializer)
        if handler.unary_stream is not None and inspect.isasyncgenfunction(
                handler.unary_stream):
            stream: Any = handler.unary_stream

            async def unary_stream(request: Any, context: grpc.aio.ServicerContext[Any, Any]
                                   ) -> AsyncIterator[Any]:
                if request is UNDECODABLE:
                    context.set_code(grpc.StatusCode.INVALID_ARGUMENT)
                    context.set_details(message)
                    return
                async for reply in stream(request, context):
                    yield reply

            return grpc.unary_stream_rpc_method_handler(unary_stream, parse,
                                                        handler.response_serializer)
        return handler
