"""Ladder play from the client side: register, enter, play assigned matches, stop."""

from __future__ import annotations

import asyncio
import json
import signal
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from client_sdk import SeatRefused
from client_sdk.connection import play_ladder, register

from .relay import Relay
from .support import MAMMAMIA

TIMEOUT_S = 60


@pytest.fixture
def ladder(start_server: Any) -> Any:
    return start_server(ladder_players="2-2")


def test_two_bots_register_enter_and_each_play_a_match(ladder: Any) -> None:
    async def main() -> list[int]:
        alice = await register(ladder.address, "alice")
        bob = await register(ladder.address, "bob")
        with pytest.raises(SeatRefused, match="ALREADY_EXISTS"):
            await register(ladder.address, "alice")
        return list(
            await asyncio.gather(
                play_ladder(GreedyBot, ladder.address, "alice", alice, matches=1),
                play_ladder(RandomBot, ladder.address, "bob", bob, matches=1),
            )
        )

    assert asyncio.run(asyncio.wait_for(main(), TIMEOUT_S)) == [1, 1]


def test_a_ladder_bot_plays_match_after_match_on_one_call(ladder: Any) -> None:
    async def main() -> list[int]:
        keys = [await register(ladder.address, name) for name in ("carol", "dave")]
        return list(
            await asyncio.gather(
                play_ladder(GreedyBot, ladder.address, "carol", keys[0], matches=3),
                play_ladder(RandomBot, ladder.address, "dave", keys[1], matches=3),
            )
        )

    with capture_logs() as logs:
        assert asyncio.run(asyncio.wait_for(main(), TIMEOUT_S)) == [3, 3]
    events = [e["event"] for e in logs]
    # One PlayMatches call a bot, every seat taken on it: no Join and Play per match.
    assert events.count("table_opened") == 2
    assert events.count("seat_taken") == 6
    assert "seat_joined" not in events and "seat_rejoined" not in events
    assert events.count("match_ended") == 6


def test_a_wrong_key_is_refused(ladder: Any) -> None:
    async def main() -> None:
        await register(ladder.address, "carol")
        await play_ladder(RandomBot, ladder.address, "carol", "wrong-key", matches=1)

    with pytest.raises(SeatRefused, match="carol"):
        asyncio.run(asyncio.wait_for(main(), TIMEOUT_S))


def ladder_bot(ladder: Any, spec: str, name: str, key_file: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            MAMMAMIA,
            "bot",
            spec,
            "--server",
            ladder.address,
            "--ladder",
            "--name",
            name,
            "--key-file",
            str(key_file),
            "--log-format",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_until(proc: subprocess.Popen[str], event: str) -> list[dict[str, Any]]:
    assert proc.stderr is not None
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline and (line := proc.stderr.readline()):
        seen.append(json.loads(line))
        if seen[-1]["event"] == event:
            return seen
    raise AssertionError(f"no {event!r} in {seen}")


def test_the_ladder_command_registers_once_plays_and_stops_on_ctrl_c(
    ladder: Any, tmp_path: Path
) -> None:
    keys = [tmp_path / "dora.key", tmp_path / "emil.key"]
    procs = [
        ladder_bot(ladder, "counter", "dora", keys[0]),
        ladder_bot(ladder, "greedy", "emil", keys[1]),
    ]
    try:
        for proc in procs:
            lines = read_until(proc, "match_ended")
            assert [e for e in lines if e["event"] == "ladder_registered"]
        for proc in procs:
            proc.send_signal(signal.SIGINT)
        for proc in procs:
            _, err = proc.communicate(timeout=TIMEOUT_S)
            assert proc.returncode == 130 and "Traceback" not in err
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for key in keys:
        assert key.read_text().strip()
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    # With its key file in place, the bot enters again without registering.
    again = ladder_bot(ladder, "counter", "dora", keys[0])
    try:
        lines = read_until(again, "ladder_entered")
        assert not [e for e in lines if e["event"] == "ladder_registered"]
        again.send_signal(signal.SIGINT)
        again.communicate(timeout=TIMEOUT_S)
        assert again.returncode == 130
    finally:
        if again.poll() is None:
            again.kill()
            again.wait()


def test_a_key_file_that_cannot_be_created_costs_no_name(ladder: Any, tmp_path: Path) -> None:
    unwritable = tmp_path / "no-such-directory" / "fay.key"
    proc = ladder_bot(ladder, "random", "fay", unwritable)
    _, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 2 and "--key-file" in err and "Traceback" not in err, err
    # The name was not registered: registering it now works.
    key = asyncio.run(asyncio.wait_for(register(ladder.address, "fay"), TIMEOUT_S))
    assert key


def older_server(target: str) -> Relay:
    """Returns a server of an earlier version, as the SDK sees it: a proxy that forwards
    the Ladder's Enter and the Seat's Join and Play to ``target`` and has no PlayMatches
    (UNIMPLEMENTED)."""
    return Relay(target, without={"PlayMatches"})


def test_a_ladder_bot_plays_a_server_without_play_matches_on_play_calls(ladder: Any) -> None:
    async def main() -> list[int]:
        keys = [await register(ladder.address, name) for name in ("erin", "frank")]
        async with older_server(ladder.address) as older:
            return list(
                await asyncio.gather(
                    play_ladder(GreedyBot, older.address, "erin", keys[0], matches=2),
                    play_ladder(RandomBot, older.address, "frank", keys[1], matches=2),
                )
            )

    with capture_logs() as logs:
        assert asyncio.run(asyncio.wait_for(main(), TIMEOUT_S)) == [2, 2]
    events = [e["event"] for e in logs]
    # Each bot finds PlayMatches missing once, then plays every match with Join and Play.
    assert events.count("play_matches_unsupported") == 2
    assert events.count("table_opened") == 2
    # Each seat joined once, on Join: never taken on PlayMatches (nor logged as taken
    # there), so never a rejoin.
    assert events.count("seat_joined") >= 4 and "seat_rejoined" not in events
    assert "seat_taken" not in events
    assert events.count("match_ended") >= 4
