"""A gRPC proxy on 127.0.0.1 in front of a real server, for the SDK's tests to count
the calls a bot makes, leave methods out (as an older server) or step into a call."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, ClassVar

import grpc

PLAY_MATCHES = "/mammamia.v1.Seat/PlayMatches"


def metadata(context: Any) -> tuple[tuple[str, str], ...]:
    """Returns the client's metadata of a call, less gRPC's own (``:authority`` ...),
    to send on to the server."""
    return tuple((k, v) for k, v in context.invocation_metadata() if not k.startswith(":"))


class Relay:
    """A gRPC proxy on 127.0.0.1 that forwards the Ladder's Enter and the Seat's Join,
    Play and PlayMatches to a real server (those named in ``without`` left out: they
    answer UNIMPLEMENTED) and counts the calls by method name (``calls``).

    A subclass steps into the calls by overriding ``unary_unary``, ``unary_stream`` or
    ``stream_stream``, each called with the method's full name."""

    KINDS: ClassVar[dict[str, str]] = {
        "/mammamia.v1.Ladder/Enter": "unary_stream",
        "/mammamia.v1.Seat/Join": "unary_unary",
        "/mammamia.v1.Seat/Play": "stream_stream",
        PLAY_MATCHES: "stream_stream",
    }

    def __init__(self, target: str, *, without: Iterable[str] = ()) -> None:
        self.target = target
        self.without = frozenset(without)
        self.calls: Counter[str] = Counter()
        self.address = ""

    async def __aenter__(self) -> Relay:
        self.channel = grpc.aio.insecure_channel(self.target)
        self.server = grpc.aio.server()
        self.server.add_generic_rpc_handlers((_Handler(self),))
        port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        self.address = f"127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.stop(0)
        await self.channel.close()

    def kind(self, method: str) -> str | None:
        """Returns how ``method`` (its full name) is forwarded ("unary_unary",
        "unary_stream", "stream_stream"), or None if it is not."""
        if method.rsplit("/", 1)[1] in self.without:
            return None
        return self.KINDS.get(method)

    async def unary_unary(self, method: str, request: bytes, context: Any) -> bytes:
        """Returns the server's reply to ``request``."""
        remote: Any = self.channel.unary_unary(method)
        reply: bytes = await remote(request, metadata=metadata(context))
        return reply

    async def unary_stream(self, method: str, request: bytes, context: Any) -> AsyncIterator[bytes]:
        """Yields the server's replies to ``request``."""
        remote: Any = self.channel.unary_stream(method)
        async for reply in remote(request, metadata=metadata(context)):
            yield reply

    def open(self, method: str, context: Any) -> Any:
        """Returns the server's side of a stream-stream call, opened with the client's
        metadata."""
        return self.channel.stream_stream(method)(metadata=metadata(context))

    async def stream_stream(
        self, method: str, requests: AsyncIterator[bytes], context: Any
    ) -> AsyncIterator[bytes]:
        """Yields the server's replies while passing the client's ``requests`` on."""
        call = self.open(method, context)

        async def pump() -> None:
            async for request in requests:
                await call.write(request)
            await call.done_writing()

        pumping = asyncio.ensure_future(pump())
        try:
            async for reply in call:
                yield reply
        finally:
            # The client went or the server ended: neither side outlives the other.
            pumping.cancel()
            call.cancel()


class _Handler(grpc.GenericRpcHandler):
    """Hands each call the relay forwards to the relay's method of the call's kind."""

    def __init__(self, relay: Relay) -> None:
        self.relay = relay

    def service(self, details: Any) -> Any:
        """Returns the handler of the call ``details`` names, or None (UNIMPLEMENTED)."""
        relay, method = self.relay, details.method
        kind = relay.kind(method)
        if kind is None:
            return None
        name = method.rsplit("/", 1)[1]

        async def unary_unary(request: bytes, context: Any) -> bytes:
            relay.calls[name] += 1
            return await relay.unary_unary(method, request, context)

        async def unary_stream(request: bytes, context: Any) -> AsyncIterator[bytes]:
            relay.calls[name] += 1
            async for reply in relay.unary_stream(method, request, context):
                yield reply

        async def stream_stream(
            requests: AsyncIterator[bytes], context: Any
        ) -> AsyncIterator[bytes]:
            relay.calls[name] += 1
            async for reply in relay.stream_stream(method, requests, context):
                yield reply

        handler: Callable[[Callable[..., Any]], grpc.RpcMethodHandler[Any, Any]] = {
            "unary_unary": grpc.unary_unary_rpc_method_handler,
            "unary_stream": grpc.unary_stream_rpc_method_handler,
            "stream_stream": grpc.stream_stream_rpc_method_handler,
        }[kind]
        behaviours: dict[str, Callable[..., Any]] = {
            "unary_unary": unary_unary,
            "unary_stream": unary_stream,
            "stream_stream": stream_stream,
        }
        return handler(behaviours[kind])
