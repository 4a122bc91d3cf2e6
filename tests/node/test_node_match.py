"""The Node.js bot plays complete matches on a real server against Python bots.

Each test starts a server (the `server` fixture), creates a 3-player match, runs
the Node.js bot in one seat and `mammamia bot random` in the others, then checks
the stored game record: it replays to a finished game, and every decision of the
Node.js seat is the one its log says it chose (none taken by the server at a
deadline).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .tcp_proxy import TcpProxy

MATCH_TIMEOUT_S = 90  # bounds every wait: no test can hang
NODE_SEAT = 1  # not the first seat, so seats are not confused with 0/absent
PLAYERS = 3


@dataclass
class Match:
    """A created match: its id and one seat token per seat."""

    id: str
    tokens: list[str]


def mammamia(*args: str, server: Any, timeout: float = 60) -> str:
    """Returns the stdout of a `mammamia` command run with the server's organiser key;
    fails the test with its stderr when it exits non-zero."""
    env = {**os.environ, "MAMMAMIA_ORGANISER_KEY": server.organiser_key}
    done = subprocess.run(
        [sys.executable, "-m", "mammamia", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"mammamia {' '.join(args)}: {done.stderr}"
    return done.stdout


def create_match(server: Any) -> Match:
    """Returns a new 3-player match on the server."""
    out = json.loads(
        mammamia(
            "match", "create", "--server", server.address, "--players", str(PLAYERS), server=server
        )
    )
    return Match(out["match"], out["tokens"])


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Yields a list for the test's player processes; kills those still running at the
    end, so a failing test leaves no bot behind."""
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for p in processes:
        if p.poll() is None:
            p.kill()
            p.wait()


def start_players(
    server: Any,
    match: Match,
    node_command: list[str],
    node_address: str,
    tmp_path: Path,
    started: list[subprocess.Popen[bytes]],
) -> tuple[subprocess.Popen[bytes], list[subprocess.Popen[bytes]]]:
    """Returns the Node.js bot's process (seat NODE_SEAT, through `node_address`) and
    the Python bots' processes (the other seats), their stderr in files in tmp_path.

    Tokens go as `--token=T`: a URL-safe token may begin with '-'."""
    # Each process writes to its own copy of its log file: ours are closed once all started.
    with contextlib.ExitStack() as logs:
        node = subprocess.Popen(
            [
                *node_command,
                "--server",
                node_address,
                f"--token={match.tokens[NODE_SEAT]}",
                "--name",
                "node-bot",
            ],
            stdout=subprocess.DEVNULL,
            stderr=logs.enter_context((tmp_path / "node.log").open("wb")),
        )
        python = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "mammamia",
                    "bot",
                    "random",
                    "--server",
                    server.address,
                    f"--token={token}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=logs.enter_context((tmp_path / f"python-{seat}.log").open("wb")),
            )
            for seat, token in enumerate(match.tokens)
            if seat != NODE_SEAT
        ]
    started += [node, *python]
    return node, python


def wait_all(processes: list[subprocess.Popen[bytes]], tmp_path: Path) -> list[int]:
    """Returns the processes' exit statuses; kills them all and fails the test with
    their logs when they are not all done within MATCH_TIMEOUT_S."""
    deadline = time.monotonic() + MATCH_TIMEOUT_S
    try:
        return [p.wait(timeout=max(0.1, deadline - time.monotonic())) for p in processes]
    except subprocess.TimeoutExpired:
        for p in processes:
            p.kill()
            p.wait()
        logs = "\n".join(
            f"--- {f.name}\n{f.read_text()[-3000:]}" for f in sorted(tmp_path.glob("*.log"))
        )
        pytest.fail(f"the match did not end within {MATCH_TIMEOUT_S} s\n{logs}")


def node_decisions(log: str) -> list[tuple[str, str]]:
    """Returns (decision id, choice) for each decision the Node.js bot logged, in
    order; a decision answered again after a reconnect counts once, as last answered."""
    chosen: dict[str, str] = {}
    for line in log.splitlines():
        if " info decision " not in line:
            continue
        decision = re.search(r" decision=(\S+)", line)
        choice = re.search(r' choice="([^"]*)"', line) or re.search(r" choice=(\S+)", line)
        assert decision and choice, f"unreadable decision line: {line}"
        chosen[decision.group(1)] = choice.group(1)
    return list(chosen.items())


def describe(action: dict[str, Any]) -> str:
    """Returns a record action (RECORD.md form) described as the Node.js bot logs it."""
    if "resolve" in action:
        r = action["resolve"]
        if not r["bake"]:
            return "decline"
        parts = ["bake"]
        if r.get("ingredient"):
            parts.append(f"as {r['ingredient']}")
        hand = [f"{n} {kind}" for kind, n in r.get("hand", {}).items() if n]
        if hand:
            parts.append(f"adding {' + '.join(hand)}")
        return ", ".join(parts)
    parts = [
        "pass"
        if action.get("pass")
        else f"play {action['play']['count']} {action['play']['ingredient']}"
    ]
    if action.get("order"):
        parts.append(f"order {action['order']}")
    if action.get("draw"):
        parts.append(f"draw {action['draw']}")
    return ", ".join(parts)


def check_record(server: Any, match: Match, node_log: str, tmp_path: Path) -> dict[str, Any]:
    """Returns the match's record after checking it: it replays to a finished game,
    and the Node.js seat's decisions are exactly those its log shows, none taken
    by the server."""
    text = mammamia("match", "record", "--server", server.address, match.id, server=server)
    record: dict[str, Any] = json.loads(text)
    path = tmp_path / "record.json"
    path.write_text(text)

    state = json.loads(mammamia("state", str(path), server=server))
    assert state["phase"] == "over"
    assert state["winners"], "a finished game has winners"

    meta = record["meta"]
    assert meta["names"][NODE_SEAT] == "node-bot"
    assert [t for t in meta.get("timeouts", []) if t["seat"] == NODE_SEAT] == []
    assert [a for a in meta.get("autopilot", []) if a["seat"] == NODE_SEAT] == []

    mine = [describe(a) for a in record["actions"] if a["seat"] == NODE_SEAT]
    logged = [choice for _, choice in node_decisions(node_log)]
    assert mine, "the Node.js seat took part in the game"
    assert logged == mine
    return record


def test_node_bot_plays_a_match_against_python_bots(
    server: Any, node_bot: list[str], tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    match = create_match(server)
    node, python = start_players(server, match, node_bot, server.address, tmp_path, started)

    statuses = wait_all([node, *python], tmp_path)

    node_log = (tmp_path / "node.log").read_text()
    assert statuses == [0] * PLAYERS, node_log[-3000:]
    assert re.search(
        rf" match_ended .*match={match.id} seat={NODE_SEAT} status=finished", node_log
    ), node_log[-3000:]
    check_record(server, match, node_log, tmp_path)


def test_node_bot_resumes_after_its_connection_drops(
    server: Any, node_bot: list[str], tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    match = create_match(server)
    with TcpProxy(server.address) as proxy:
        node, python = start_players(server, match, node_bot, proxy.address, tmp_path, started)
        log_file = tmp_path / "node.log"

        # Cut the Node.js bot's connection twice: once it has decided a few times,
        # and again once it is back (rejoined) and has decided again.
        deadline = time.monotonic() + MATCH_TIMEOUT_S
        wanted = 4
        for cuts in range(2):
            while time.monotonic() < deadline and node.poll() is None:
                log = log_file.read_text()
                if (
                    len(node_decisions(log)) >= wanted
                    and len(re.findall(r" rejoined ", log)) >= cuts
                ):
                    break
                time.sleep(0.005)
            assert proxy.cut() > 0, "the bot was connected through the proxy"
            wanted = len(node_decisions(log_file.read_text())) + 1
        statuses = wait_all([node, *python], tmp_path)

    node_log = log_file.read_text()
    assert statuses == [0] * PLAYERS, node_log[-3000:]
    resumed = [int(n) for n in re.findall(r" rejoined .*after_sequence=(\d+)", node_log)]
    assert len(resumed) >= 2 and all(n > 0 for n in resumed), node_log[-3000:]
    check_record(server, match, node_log, tmp_path)


def test_node_bot_with_a_wrong_token_stops_with_status_1(server: Any, node_bot: list[str]) -> None:
    done = subprocess.run(
        [*node_bot, "--server", server.address, "--token", "not-a-token"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1
    assert "UNAUTHENTICATED" in done.stderr


def test_node_bot_help_and_bad_command_line(node_bot: list[str]) -> None:
    helped = subprocess.run(
        [*node_bot, "--help"], capture_output=True, text=True, timeout=30, check=False
    )
    assert helped.returncode == 0
    assert "--ladder" in helped.stdout and "--token" in helped.stdout
    bad = subprocess.run(
        [*node_bot, "--server", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert bad.returncode == 2
    assert "--token" in bad.stderr


def test_node_bot_stops_on_sigint(server: Any, node_bot: list[str], tmp_path: Path) -> None:
    match = create_match(server)  # the other seats never join: the match waits
    log_file = tmp_path / "node.log"
    with log_file.open("wb") as log:
        node = subprocess.Popen(
            [*node_bot, "--server", server.address, f"--token={match.tokens[NODE_SEAT]}"],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + MATCH_TIMEOUT_S
        while " info joined " not in log_file.read_text() and time.monotonic() < deadline:
            assert node.poll() is None, log_file.read_text()
            time.sleep(0.02)
        node.send_signal(signal.SIGINT)
        assert node.wait(timeout=30) == 130
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()
    assert " warn stopping " in log_file.read_text()
