"""Helpers for the SDK's tests against a real server: matches, records, a cuttable link."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from client_sdk import Bot, Resolve, Turn, View
from mammamia import Record, loads

MAMMAMIA = str(Path(sys.executable).with_name("mammamia"))


def create_match(server: Any, players: int, seed: int = 1, *extra: str) -> tuple[str, list[str]]:
    """Returns (match id, seat tokens) of a new match on ``server`` (the conftest fixture)."""
    out = subprocess.run(
        [
            MAMMAMIA,
            "match",
            "create",
            "--server",
            server.address,
            "--organiser-key",
            server.organiser_key,
            "--players",
            str(players),
            "--seed",
            str(seed),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    created = json.loads(out.stdout)
    return created["match"], created["tokens"]


def match_record(server: Any, match_id: str) -> Record:
    """Returns the game record of a match, read with ``mammamia match record``."""
    out = subprocess.run(
        [
            MAMMAMIA,
            "match",
            "record",
            "--server",
            server.address,
            "--organiser-key",
            server.organiser_key,
            match_id,
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return loads(out.stdout)


class Recording(Bot):
    """Wraps a bot and keeps every view it was given."""

    def __init__(self, inner: Bot) -> None:
        self.inner = inner
        self.name = inner.name
        self.views: list[View] = []
        self.started: View | None = None
        self.ended: View | None = None

    def on_game_start(self, view: View) -> None:
        self.started = view

    def on_game_end(self, view: View) -> None:
        self.ended = view

    def turn(self, view: View) -> Turn:
        self.views.append(view)
        return self.inner.turn(view)

    def resolve(self, view: View) -> Resolve:
        self.views.append(view)
        return self.inner.resolve(view)


class Link:
    """A TCP relay between a client and a server that a test can cut and restore,
    as a network failure would: cutting closes every connection and stops listening."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.cuts = 0
        self._listener: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def open(self) -> None:
        """Starts listening (on the same port as before after a cut)."""
        self._listener = await asyncio.start_server(
            self._relay, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = self._listener.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        """Closes the listener and every relayed connection."""
        self.cuts += 1
        assert self._listener is not None
        self._listener.close()
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        await self._listener.wait_closed()

    async def close(self) -> None:
        """Cuts the link for good."""
        if self._listener is not None and self._listener.is_serving():
            await self.cut()
            self.cuts -= 1
        for writer in list(self._writers):
            writer.transport.abort()
        await asyncio.sleep(0)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._writers -= {writer, up_writer}
