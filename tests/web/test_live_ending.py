"""The web page's live stream ends from the server's side when the server lets go of
its match (``server.streams.Ending``, the same hook that ends the gRPC streams, whose
whole path tests/server/test_stream_expiry.py follows): the connection closes at
once, without the end event, and the server counts no open stream. A real server
and its web page on port 0, in-process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
from aiohttp import web

from server.app import create_server
from server.web.api import make_app


def test_the_server_ends_a_live_stream_through_its_ending(tmp_path: Path) -> None:
    async def go() -> None:
        arena, _ = await create_server(
            "127.0.0.1:0", db_path=tmp_path / "arena.db", organiser_key="k"
        )
        await arena.start()
        app, page = make_app(arena)
        site_runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await site_runner.setup()
        site = web.TCPSite(site_runner, "127.0.0.1", 0)
        await site.start()
        port = site_runner.addresses[0][1]
        runners = arena.runners
        try:
            runner = runners.create_match(2, seed=29, deadline_ms=60_000)
            runner.join(0)
            runner.join(1)
            url = f"http://127.0.0.1:{port}/api/live/{runner.id}/stream"
            async with aiohttp.ClientSession() as session, session.get(url) as response:
                assert response.status == 200
                first = await asyncio.wait_for(response.content.readuntil(b"\n\n"), 10)
                assert first.startswith(b"data: ")
                async with asyncio.timeout(10):
                    while runners.streams_open.count != 1:
                        await asyncio.sleep(0.01)
                (follower,) = runner.streams.followers
                assert follower.ending is not None
                follower.ending(f"match {runner.id!r} is no longer held")
                # The connection is closed at once: no end event comes.
                async with asyncio.timeout(10):
                    try:
                        rest = await response.content.read()
                    except aiohttp.ClientPayloadError:
                        rest = b""
                assert b"event: end" not in rest
                async with asyncio.timeout(10):
                    while runners.streams_open.count:
                        await asyncio.sleep(0.01)
                assert not page.streams  # the per-client count let go of it too
            runner.abort("the test is over")
            await asyncio.wait_for(runner.result(), 30)
        finally:
            await site_runner.cleanup()
            page.close()
            await arena.drain(grace=1)

    asyncio.run(go())
