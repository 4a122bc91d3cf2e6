"""The bare transport: a minimal ``grpc.aio`` bidirectional-stream echo service.

``python -m bench.echo --port-file FILE --reply FILE`` serves ``/bench.Echo/Echo``
on 127.0.0.1 (plaintext, a free port written to ``--port-file``): every message
that comes up the stream is answered with one message, the bytes of ``--reply``
(a real encoded decision request, so the reply is as large as the server's). No
protobuf is parsed or built on this side: it is the physical limit an arena
server's answer path is compared with (``bench.protocol``).

It also serves ``/bench.Echo/Pair``: two streams that send the same ``pair``
metadata value are paired like the two seats of a match, and every message up one
stream is answered the way the arena server answers a decision, with no game
behind it: the next request (``--reply``, which carries the events before it) down
the other stream, and, with ``--ack FILE``, an acknowledgement (a real act result)
down the same stream as well, for a server that sends it on its own. It measures
what the server's pattern of messages costs on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Final

import grpc

SERVICE: Final = "bench.Echo"
METHOD: Final = f"/{SERVICE}/Echo"
PAIR: Final = f"/{SERVICE}/Pair"


def handler(reply: bytes) -> grpc.RpcMethodHandler[bytes, bytes]:
    """Returns the Echo method: one ``reply`` for every message received."""

    async def echo(
        requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> AsyncIterator[bytes]:
        async for _ in requests:
            yield reply

    return grpc.stream_stream_rpc_method_handler(echo)


def pair_handler(reply: bytes, ack: bytes = b"") -> grpc.RpcMethodHandler[bytes, bytes]:
    """Returns the Pair method: streams paired by their ``pair`` metadata, each message
    answered with ``reply`` on the other stream, then ``ack`` (if any) on its own."""
    pairs: dict[str, list[asyncio.Queue[bytes]]] = {}

    async def pair(
        requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> AsyncIterator[bytes]:
        key = dict(context.invocation_metadata() or ()).get("pair", "")
        mine: asyncio.Queue[bytes] = asyncio.Queue()
        both = pairs.setdefault(str(key), [])

        async def read() -> None:
            joined = False
            async for _ in requests:
                if not joined:
                    # The first message joins, as Play's first message does; once both
                    # streams have joined, the first one is asked.
                    joined = True
                    both.append(mine)
                    if len(both) == 2:
                        both[0].put_nowait(reply)
                    continue
                other = next((q for q in both if q is not mine), mine)
                other.put_nowait(reply)
                if ack:
                    mine.put_nowait(ack)

        reader = asyncio.ensure_future(read())
        try:
            while True:
                yield await mine.get()
        finally:
            reader.cancel()
            if mine in both:
                both.remove(mine)
            if not both:
                pairs.pop(str(key), None)

    return grpc.stream_stream_rpc_method_handler(pair)


async def serve(port_file: Path, reply: bytes, ack: bytes = b"") -> None:
    """Serves the echo and the pairs until SIGTERM or SIGINT, after writing the bound
    port."""
    server = grpc.aio.server()
    methods = {"Echo": handler(reply), "Pair": pair_handler(reply, ack)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, methods),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    tmp = port_file.with_suffix(".tmp")
    tmp.write_text(f"{port}\n", encoding="utf-8")
    os.replace(tmp, port_file)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    await stopping.wait()
    await server.stop(grace=0.5)


def main(argv: Sequence[str] | None = None) -> None:
    """Runs the echo server from the command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.echo", description=__doc__)
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument(
        "--reply", type=Path, required=True, help="file whose bytes answer every message"
    )
    parser.add_argument("--ack", type=Path, help="Pair: the acknowledgement of a message")
    parser.add_argument(
        "--event-loop",
        choices=("asyncio", "uvloop"),
        default="asyncio",
        help="the event loop to serve on (the arena server's is uvloop)",
    )
    args = parser.parse_args(argv)
    served = serve(
        args.port_file, args.reply.read_bytes(), args.ack.read_bytes() if args.ack else b""
    )
    if args.event_loop == "uvloop":
        import uvloop

        uvloop.run(served)
    else:
        asyncio.run(served)


if __name__ == "__main__":
    main()
