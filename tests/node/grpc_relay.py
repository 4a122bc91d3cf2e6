"""A gRPC proxy on 127.0.0.1 in front of a real server, to see which calls a client
makes (the server's logs do not name them) and to be a server of another kind: one
older than PlayMatches, or one whose first PlayMatches call breaks mid-match."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent import futures
from types import TracebackType
from typing import Any, ClassVar

import grpc

from mammamia_pb import arena_pb2 as pb

ANSWERS_BEFORE_CUT = 2
"""Answers the first PlayMatches call carries in its first match before it is cut."""


class Relay:
    """Forwards the ladder bot's calls (Register, Enter, Join, Play, PlayMatches) to
    ``upstream`` and counts them by method in ``calls``.

    ``without`` names methods the relay does not have (answered UNIMPLEMENTED, as a
    server of an earlier version). ``cut`` ("unavailable" or "closed") breaks the
    first PlayMatches call once its first match has had ``ANSWERS_BEFORE_CUT``
    answers, instead of passing on the next decision request (the decision stays
    open): with status UNAVAILABLE, as a connection lost, or with OK and no
    ``match_ended``; ``cut_match`` is then that match's id. ``starts`` keeps every
    message that starts a seat's stream (``observe`` on Play, ``sit`` on PlayMatches),
    in order. Use as a context manager.
    """

    KINDS: ClassVar[dict[str, str]] = {
        "/mammamia.v1.Ladder/Register": "unary_unary",
        "/mammamia.v1.Ladder/Enter": "unary_stream",
        "/mammamia.v1.Seat/Join": "unary_unary",
        "/mammamia.v1.Seat/Play": "stream_stream",
        "/mammamia.v1.Seat/PlayMatches": "stream_stream",
    }

    def __init__(
        self, upstream: str, *, without: frozenset[str] = frozenset(), cut: str | None = None
    ) -> None:
        self.without = without
        self.cut = cut
        self.calls: Counter[str] = Counter()
        self.cut_match = ""
        self.starts: list[pb.PlayRequest] = []
        self._lock = threading.Lock()
        self._channel = grpc.insecure_channel(upstream)
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
        self._server.add_generic_rpc_handlers((_Handler(self),))
        self.address = f"127.0.0.1:{self._server.add_insecure_port('127.0.0.1:0')}"
        self._server.start()

    def count(self, method: str) -> int:
        """Returns the number of ``method`` calls so far, this one included."""
        with self._lock:
            self.calls[method] += 1
            return self.calls[method]

    def noted(self, requests: Iterator[bytes], acts: list[int]) -> Iterator[bytes]:
        """Yields the client's messages of a Play or PlayMatches call, keeping those
        that start a seat's stream (in ``starts``) and counting answers in ``acts[0]``."""
        for request in requests:
            message = pb.PlayRequest.FromString(request)
            kind = message.WhichOneof("message")
            if kind == "act":
                acts[0] += 1
            elif kind in {"observe", "sit"}:
                with self._lock:
                    self.starts.append(message)
            yield request

    def remote(self, method: str, kind: str) -> Any:
        """Returns the upstream server's callable for ``method``, bytes in and out."""
        return getattr(self._channel, kind)(method)

    def play_matches(
        self, requests: Iterator[bytes], context: grpc.ServicerContext, number: int
    ) -> Iterator[bytes]:
        """Yields the server's messages of PlayMatches call ``number`` (1: the first),
        breaking the first one as ``cut`` says."""
        cut = self.cut if number == 1 else None
        acts = [0]  # answers passed on so far, counted by the client's side
        call = self.remote("/mammamia.v1.Seat/PlayMatches", "stream_stream")(
            self.noted(requests, acts), metadata=_metadata(context)
        )
        context.add_callback(call.cancel)
        match_id = ""
        for reply in _forwarded(call, context):
            events = pb.SeatEvents.FromString(reply).events
            kinds = {e.WhichOneof("event") for e in events}
            for event in events:
                if event.WhichOneof("event") == "snapshot" and not match_id:
                    match_id = event.snapshot.match_id
            if (
                cut is not None
                and not self.cut_match
                and acts[0] >= ANSWERS_BEFORE_CUT
                and "decision" in kinds
                and "match_ended" not in kinds
            ):
                # Broken: the server's side goes (the seat's stream with it), then the
                # client's, as a dropped connection would.
                self.cut_match = match_id
                call.cancel()
                if cut == "unavailable":
                    context.abort(grpc.StatusCode.UNAVAILABLE, "the relay cut the call")
                return
            yield reply

    def close(self) -> None:
        """Stops the relay (its calls cancelled) and closes the upstream channel."""
        self._server.stop(0).wait(10)
        self._channel.close()

    def __enter__(self) -> Relay:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def _metadata(context: grpc.ServicerContext) -> tuple[tuple[str, str], ...]:
    """Returns the client's metadata (the seat token, the bot key) to pass on."""
    return tuple((k, str(v)) for k, v in context.invocation_metadata() if not k.startswith(":"))


def _forwarded(call: Any, context: grpc.ServicerContext) -> Iterator[bytes]:
    """Yields the upstream call's messages, and ends the relayed call with the status
    the upstream call ended with (unless the client is gone)."""
    try:
        yield from call
    except grpc.RpcError as e:
        if context.is_active():
            context.abort(e.code(), e.details() or "")


class _Handler(grpc.GenericRpcHandler):
    def __init__(self, relay: Relay) -> None:
        self.relay = relay

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[Any, Any] | None:
        method = details.method
        kind = Relay.KINDS.get(method)
        name = method.rsplit("/", 1)[1]
        if kind is None:
            return None  # UNIMPLEMENTED
        if name in self.relay.without:
            self.relay.count(name)  # asked for, and answered UNIMPLEMENTED
            return None
        relay = self.relay
        remote = relay.remote(method, kind)

        def unary_unary(request: bytes, context: grpc.ServicerContext) -> bytes:
            relay.count(name)
            try:
                reply: bytes = remote(request, metadata=_metadata(context))
                return reply
            except grpc.RpcError as e:
                context.abort(e.code(), e.details() or "")

        def unary_stream(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
            relay.count(name)
            call = remote(request, metadata=_metadata(context))
            context.add_callback(call.cancel)
            yield from _forwarded(call, context)

        def stream_stream(
            requests: Iterator[bytes], context: grpc.ServicerContext
        ) -> Iterator[bytes]:
            number = relay.count(name)
            if name == "PlayMatches":
                yield from relay.play_matches(requests, context, number)
                return
            call = remote(relay.noted(requests, [0]), metadata=_metadata(context))
            context.add_callback(call.cancel)
            yield from _forwarded(call, context)

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
