"""The bare transport: a minimal ``grpc.aio`` bidirectional-stream echo service.

``python -m bench.echo --port-file FILE --reply FILE`` serves ``/bench.Echo/Echo``
on 127.0.0.1 (plaintext, a free port written to ``--port-file``): every message
that comes up the stream is answered with one message, the bytes of ``--reply``
(a real encoded decision request, so the reply is as large as the server's). No
protobuf is parsed or built on this side: it is the physical limit an arena
server's answer path is compared with (``bench.protocol``).
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


def handler(reply: bytes) -> grpc.RpcMethodHandler:
    """Returns the Echo method: one ``reply`` for every message received."""
    async def echo(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
                   ) -> AsyncIterator[bytes]:
        async for _ in requests:
            yield reply

    return grpc.stream_stream_rpc_method_handler(echo)


async def serve(port_file: Path, reply: bytes) -> None:
    """Serves the echo until SIGTERM or SIGINT, after writing the bound port."""
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"Echo": handler(reply)}),))
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
    parser.add_argument("--reply", type=Path, required=True,
                        help="file whose bytes answer every message")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.port_file, args.reply.read_bytes()))


if __name__ == "__main__":
    main()
