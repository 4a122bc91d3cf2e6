"""The Node.js bot on the ladder: it registers, enters, plays its assignments to
their end against Python ladder bots, comes back with its key, and waits out an
operator's pause entered, told why it waits."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from tests.admin.test_switches import switch

NODE_NAME = "node-ladder"
RUN_TIMEOUT_S = 90


@pytest.fixture
def python_ladder_bots(start_server: Any, ladder_bots: Any) -> Any:
    """Returns a server with a ladder of 2- and 3-player matches and two Python random
    bots on it (stopped at the end)."""
    server = start_server(ladder_concurrency=2, ladder_players="2-3")
    ladder_bots(server.address, {"py-random-1": "random", "py-random-2": "random"})
    return server


def run_node(node_bot: list[str], server: Any, *args: str) -> subprocess.CompletedProcess[str]:
    """Returns the finished Node.js ladder run (it leaves after its assignments)."""
    return subprocess.run(
        [*node_bot, "--server", server.address, "--ladder", "--name", NODE_NAME, *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def test_node_bot_registers_enters_and_plays_its_assignments(
    python_ladder_bots: Any, node_bot: list[str]
) -> None:
    server = python_ladder_bots

    first = run_node(node_bot, server, "--matches", "2")
    assert first.returncode == 0, first.stderr[-3000:]
    registered = json.loads(first.stdout)
    assert registered["name"] == NODE_NAME and registered["key"]
    assert len(re.findall(r" info assigned ", first.stderr)) == 2
    assert len(re.findall(r" info match_ended .*status=finished", first.stderr)) == 2

    # Back with the key it was given, as a version named on the command line: no
    # second registration, one more match.
    again = run_node(
        node_bot, server, f"--key={registered['key']}", "--matches", "1", "--version", "v2"
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout == ""
    assert len(re.findall(r" info match_ended .*status=finished", again.stderr)) == 1

    # The ladder holds three finished matches of the bot, all its decisions its own.
    # (The bot may exit on its last MatchEnded before the ladder has stored that
    # result: the listing is read again until it shows, for at most 10 s.)
    with grpc.insecure_channel(server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        deadline = time.monotonic() + 10
        while True:
            played = ladder.Matches(pb.MatchesRequest(name=NODE_NAME), timeout=10).matches
            if len(played) >= 3 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert len(played) == 3
        for match in played:
            assert match.ladder and match.status == pb.MATCH_STATUS_FINISHED
            record = json.loads(
                ladder.GetRecord(pb.GetRecordRequest(match_id=match.match_id), timeout=10).json
            )
            seat = record["meta"]["names"].index(NODE_NAME)
            assert any(a["seat"] == seat for a in record["actions"])
            assert [t for t in record["meta"]["timeouts"] if t["seat"] == seat] == []
        # Each seat names the version that played it: by default a hash of the bot's
        # code, then the one given.
        results = ladder.Results(pb.ResultsRequest(), timeout=10).matches
        versions = [s.version for m in reversed(results) for s in m.seats if s.name == NODE_NAME]
        assert len(versions) == 3 and versions[2] == "v2", versions
        assert versions[0] == versions[1] and re.fullmatch(r"[0-9a-f]{12}", versions[0])


def test_node_bot_with_a_wrong_ladder_key_stops_with_status_1(
    start_server: Any, node_bot: list[str]
) -> None:
    server = start_server()
    done = run_node(node_bot, server, "--key=not-the-key", "--retry-for", "5")
    assert done.returncode == 1
    assert re.search(
        r"ladder refused \\?\"node-ladder\\?\": (UNAUTHENTICATED|PERMISSION_DENIED)", done.stderr
    ), done.stderr


def test_node_bot_waits_out_a_pause_and_plays_after_it(
    python_ladder_bots: Any, node_bot: list[str], tmp_path: Path
) -> None:
    server = python_ladder_bots
    switch(server.address, "pause", "a short break")
    err = tmp_path / "node.err"
    with open(err, "w") as out:
        bot = subprocess.Popen(
            [
                *node_bot,
                "--server",
                server.address,
                "--ladder",
                *("--name", NODE_NAME, "--matches", "1"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + 30
        while "ladder is paused: a short break" not in err.read_text():
            assert bot.poll() is None, err.read_text()[-3000:]
            assert time.monotonic() < deadline, "the Node.js bot was not told of the pause"
            time.sleep(0.1)
        assert " info assigned " not in err.read_text()
        switch(server.address, "resume", "back")
        assert bot.wait(RUN_TIMEOUT_S) == 0, err.read_text()[-3000:]
    finally:
        if bot.poll() is None:
            bot.kill()
    assert len(re.findall(r" info match_ended .*status=finished", err.read_text())) == 1
