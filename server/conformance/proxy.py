"""A TCP proxy on the event loop, between a client and the kit's server, whose
connections the kit can cut (the ``resume`` scenario) and whose server the kit can
change (the ``ladder-drain`` scenario: a restarted host on a new port)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable


class Proxy:
    """Forwards every connection made to ``address`` to ``upstream`` (host:port).

    ``cut()`` closes every connection open now, both ends; later connections are
    forwarded again, so a client that reconnects reaches the server. ``connections``
    counts the connections accepted so far. ``on_down``, when set, is called after
    each chunk of bytes forwarded from the server to a client.
    """

    def __init__(self, upstream: str) -> None:
        host, port = upstream.rsplit(":", 1)
        self._upstream = (host, int(port))
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.address = ""
        self.connections = 0
        self.cuts = 0
        self.on_down: Callable[[], None] | None = None

    async def start(self) -> Proxy:
        """Returns the proxy, listening on 127.0.0.1 and a free port."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.address = f"127.0.0.1:{port}"
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.transport.abort()
            return
        self._open.update((writer, up_writer))
        pumps = [
            asyncio.ensure_future(self._pump(reader, up_writer, False)),
            asyncio.ensure_future(self._pump(up_reader, writer, True)),
        ]
        self._tasks.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in pumps:
                task.cancel()
                self._tasks.discard(task)
            self._close(writer, up_writer)

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, down: bool
    ) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await source.read(65536):
                sink.write(data)
                if down and self.on_down is not None:
                    self.on_down()
                await sink.drain()

    def _close(self, *writers: asyncio.StreamWriter) -> None:
        for w in writers:
            self._open.discard(w)
            w.transport.abort()

    def retarget(self, upstream: str) -> None:
        """Forwards later connections to ``upstream`` (host:port); those open stay."""
        host, port = upstream.rsplit(":", 1)
        self._upstream = (host, int(port))

    def cut(self) -> int:
        """Returns how many sockets were open, after closing them all at once."""
        open_now = list(self._open)
        self._close(*open_now)
        self.cuts += 1
        return len(open_now)

    async def close(self) -> None:
        """Stops listening and closes every connection."""
        if self._server is not None:
            self._server.close()
        self.cut()
        for task in list(self._tasks):
            task.cancel()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
