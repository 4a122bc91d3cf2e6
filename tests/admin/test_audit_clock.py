"""The audit trail's times are the server's injected clock's: a match created on an
in-process server whose clock stands still is audited at that clock's time, as the
operator whose key created it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.app import create_server
from server.operators import Operators, add, load
from tests.server.clocks import START, ManualClock


def test_an_audit_entry_is_stamped_with_the_injected_clock(tmp_path: Path) -> None:
    dave = add(tmp_path / "operators.toml", "dave")
    clock = ManualClock()

    async def go() -> None:
        arena, port = await create_server(
            "127.0.0.1:0",
            db_path=tmp_path / "arena.db",
            organiser_key="k",
            clock=clock,
            operators=Operators("k", load(tmp_path / "operators.toml")),
        )
        await arena.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                created = await pb_grpc.OrganiserStub(channel).CreateMatch(
                    pb.CreateMatchRequest(players=2),
                    timeout=10,
                    metadata=(("organiser-key", dave),),
                )
            clock.advance(5.0)
            (entry,) = await arena.audit.entries(0, 10)
            assert (entry.at, entry.operator, entry.action, entry.target) == (
                START,
                "dave",
                "match.create",
                created.match_id,
            )
        finally:
            await arena.drain(grace=0.1)

    asyncio.run(asyncio.wait_for(go(), timeout=30))
