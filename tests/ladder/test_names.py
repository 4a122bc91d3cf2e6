"""Registered names that never enter expire, on an injected clock; only so many
such names may be registered at once (RESOURCE_EXHAUSTED beyond); an entry counts
from the moment it is made."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.db.ladder.rows import LadderFullError
from server.db.ladder.store import LadderStore
from server.ladder import ladder as ladder_module
from server.ladder import serve
from server.ladder.ladder import Ladder, UnknownBotError
from server.ladder.lobby import ReplacedError
from server.ladder.scheduler import Policy
from server.ladder.shared_lobby import SharedLobby

from .no_matches import NoMatches

if TYPE_CHECKING:
    from tests.conftest import RunningServer


class Clock:
    """Time that passes only when the test says so."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def make_ladder(
    tmp_path: Path, clock: Clock, name_expiry: float, max_unentered: int = 10_000
) -> Ladder:
    return Ladder(
        LadderStore(tmp_path / "arena.db"),
        NoMatches(),
        Policy(),
        clock=clock,
        name_expiry=name_expiry,
        max_unentered=max_unentered,
    )


def test_names_that_never_entered_expire_and_entered_ones_stay(tmp_path: Path) -> None:
    clock = Clock()
    ladder = make_ladder(tmp_path, clock, name_expiry=100)

    async def scenario() -> None:
        keys = {n: await ladder.register(n) for n in ("early", "player")}
        (await ladder.enter("player", keys["player"])).close()  # first entry: recorded
        assert ladder.store.entered("player") == clock.now
        clock.now += 50
        keys["late"] = await ladder.register("late")
        clock.now += 50  # "early" is now 100 s old
        assert await ladder.expire_names() == []
        clock.now += 1
        assert await ladder.expire_names() == ["early"]
        clock.now += 10_000
        assert await ladder.expire_names() == ["late"]
        assert await ladder.expire_names() == []
        # An expired name is gone: its key no longer enters, and the name is free.
        with pytest.raises(UnknownBotError):
            (await ladder.enter("early", keys["early"])).close()
        await ladder.register("early")
        # The bot that entered keeps its name for ever, and enters again.
        (await ladder.enter("player", keys["player"])).close()
        assert ladder.store.entered("player") == clock.now - 10_101

    asyncio.run(scenario())
    assert ladder.store.check_key("player", "x") is False
    ladder.store.close()


def test_an_entry_and_the_expiry_of_its_name_are_ordered(tmp_path: Path) -> None:
    """The name expires just before its first entry: the entry is refused, not half
    made (both go through the ladder's writer, in order)."""
    clock = Clock()
    ladder = make_ladder(tmp_path, clock, name_expiry=100)

    async def scenario() -> None:
        key = await ladder.register("racer")
        clock.now += 101
        expiring = asyncio.ensure_future(ladder.expire_names())
        await asyncio.sleep(0)  # the expiry is queued on the writer first
        with pytest.raises(UnknownBotError, match="not registered"):
            await ladder.enter("racer", key)
        assert await expiring == ["racer"]

    asyncio.run(scenario())
    ladder.store.close()


def test_an_expiry_of_zero_keeps_every_name(tmp_path: Path) -> None:
    clock = Clock()
    ladder = make_ladder(tmp_path, clock, name_expiry=0)

    async def scenario() -> None:
        await ladder.register("patient")
        clock.now += 10**9
        assert await ladder.expire_names() == []

    asyncio.run(scenario())
    assert ladder.store.unentered() == 1
    ladder.store.close()


def test_the_running_ladder_expires_names_on_its_own(tmp_path: Path) -> None:
    clock = Clock()
    ladder = make_ladder(tmp_path, clock, name_expiry=100)

    async def scenario() -> None:
        await ladder.register("gone")
        clock.now += 101
        running = asyncio.ensure_future(ladder.run())
        for _ in range(500):  # the first pass runs as the ladder starts
            await ladder.writer.flush()
            if ladder.store.unentered() == 0:
                break
            await asyncio.sleep(0.01)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

    asyncio.run(scenario())
    assert ladder.store.unentered() == 0
    ladder.store.close()


def test_names_that_never_entered_are_bounded(tmp_path: Path) -> None:
    clock = Clock()
    ladder = make_ladder(tmp_path, clock, name_expiry=100, max_unentered=2)

    async def scenario() -> None:
        keys = {n: await ladder.register(n) for n in ("one", "two")}
        with pytest.raises(LadderFullError, match="2 registered names that never entered"):
            await ladder.register("three")
        assert ladder.store.check_key("three", "anything") is False  # not kept
        (await ladder.enter("one", keys["one"])).close()  # an entered name no longer counts
        await ladder.register("three")
        with pytest.raises(LadderFullError):
            await ladder.register("four")
        clock.now += 101  # expired names free their places
        assert await ladder.expire_names() == ["three", "two"]
        await ladder.register("four")

    asyncio.run(scenario())
    ladder.store.close()


def test_the_flags_and_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    def parse(*argv: str) -> argparse.Namespace:
        parser = argparse.ArgumentParser()
        serve.add_arguments(parser)
        return parser.parse_args(argv)

    assert serve.DEFAULT_NAME_EXPIRY_S == ladder_module.DEFAULT_NAME_EXPIRY_S == 86400
    assert serve.DEFAULT_MAX_UNENTERED == ladder_module.DEFAULT_MAX_UNENTERED == 10_000
    args = parse()
    assert (args.ladder_name_expiry, args.ladder_max_unentered) == (86400, 10_000)
    args = parse("--ladder-name-expiry", "3600", "--ladder-max-unentered", "50")
    assert (args.ladder_name_expiry, args.ladder_max_unentered) == (3600, 50)
    monkeypatch.setenv("MAMMAMIA_LADDER_NAME_EXPIRY", "0")
    monkeypatch.setenv("MAMMAMIA_LADDER_MAX_UNENTERED", "7")
    args = parse()
    assert (args.ladder_name_expiry, args.ladder_max_unentered) == (0, 7)
    monkeypatch.setenv("MAMMAMIA_LADDER_NAME_EXPIRY", "soon")
    with pytest.raises(SystemExit):
        parse()


def test_register_beyond_the_bound_is_resource_exhausted(
    start_server: Callable[..., RunningServer],
) -> None:
    server = start_server(ladder_max_unentered=2)
    with grpc.insecure_channel(server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        for name in ("u1", "u2"):
            ladder.Register(pb.RegisterRequest(name=name), timeout=10)
        with pytest.raises(grpc.RpcError) as caught:
            ladder.Register(pb.RegisterRequest(name="u3"), timeout=10)
    e = caught.value
    assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    details = e.details() or ""
    assert "never entered" in details and "expired" in details


def test_an_entry_is_recorded_when_enter_returns(database: str) -> None:
    """An entry counts from the moment ``enter`` returns (the Enter stream's headers
    are sent then): a second entry of the bot replaces it even if the first was never
    read from, on one host and, on PostgreSQL, through another host."""
    clock = Clock()
    ladders = [
        Ladder(
            LadderStore(database),
            NoMatches(),
            Policy(),
            clock=clock,
            host_id=f"host-{i}",
            advertise=lambda: "127.0.0.1:1",
        )
        for i in range(2)
    ]
    first, other = ladders

    async def replaced(entry: object) -> None:
        with pytest.raises(ReplacedError, match="entered the ladder again"):
            await asyncio.wait_for(anext(entry), 10)  # type: ignore[call-overload]

    async def scenario() -> None:
        key = await first.register("ada")
        older = await first.enter("ada", key)
        newer = await first.enter("ada", key)  # on the same host
        await replaced(older)
        newer.close()
        if not isinstance(first.lobby, SharedLobby):
            return
        older = await first.enter("ada", key)
        newer = await other.enter("ada", key)  # through another host
        await first.lobby.announce()
        await replaced(older)
        older.close()
        newer.close()

    asyncio.run(scenario())
    for ladder in ladders:
        ladder.writer.close()  # the entries' removals run before their store closes
        ladder.store.close()
