"""The Node.js bot's ``--search`` mode plays a whole match on a real server, deciding
through a Rules service it starts itself (``mammamia rules-serve``), with a tiny
budget so the match stays short."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

MATCH_TIMEOUT_S = 90
SEARCH_SEAT = 0


def test_node_search_plays_a_match_through_the_rules_service(
    server: Any, node_bot: list[str], tmp_path: Path
) -> None:
    env = {**os.environ, "MAMMAMIA_ORGANISER_KEY": server.organiser_key}
    created = subprocess.run(
        [
            sys.executable,
            "-m",
            "mammamia",
            "match",
            "create",
            "--server",
            server.address,
            "--players",
            "2",
            "--seed",
            "4",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    tokens = json.loads(created.stdout)["tokens"]
    log_file = tmp_path / "search.log"
    # Each process writes to its own copy of its log file: ours are closed once started.
    with log_file.open("wb") as search_log, (tmp_path / "greedy.log").open("wb") as greedy_log:
        search = subprocess.Popen(
            [
                *node_bot,
                "--server",
                server.address,
                f"--token={tokens[SEARCH_SEAT]}",
                "--name",
                "node-search",
                "--search",
                "--search-ms",
                "15",
                "--rules-command",
                f"{sys.executable} -m mammamia",
            ],
            stdout=subprocess.DEVNULL,
            stderr=search_log,
        )
        other = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mammamia",
                "bot",
                "greedy",
                "--server",
                server.address,
                f"--token={tokens[1 - SEARCH_SEAT]}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=greedy_log,
        )
    deadline = time.monotonic() + MATCH_TIMEOUT_S
    try:
        statuses = [p.wait(timeout=max(0.1, deadline - time.monotonic())) for p in (search, other)]
    except subprocess.TimeoutExpired:
        for p in (search, other):
            p.kill()
            p.wait()
        pytest.fail(f"the match did not end in time: {log_file.read_text()[-3000:]}")
    log = log_file.read_text()
    assert statuses == [0, 0], log[-3000:]
    assert " rules_started " in log and " searching " in log
    assert re.search(r" match_ended .* status=finished", log), log[-3000:]
    assert " search_failed " not in log, log[-3000:]
    # Decisions with a choice to make were searched: samples played out, in time.
    searched = [int(m.group(1)) for m in re.finditer(r" decision .* playouts=(\d+)", log)]
    assert searched and sum(searched) > 0
    times = [int(m.group(1)) for m in re.finditer(r" search_ms=(\d+)", log)]
    assert max(times) < 2000
    # The service it started is gone with it.
    pid = re.search(r" rules_started .*pid=(\d+)", log)
    assert pid is not None
    for _ in range(100):
        if not running(int(pid.group(1))):
            break
        time.sleep(0.05)
    else:
        pytest.fail("the Rules service the bot started is still running")


def running(pid: int) -> bool:
    """Returns whether process ``pid`` still runs (a zombie waiting to be reaped does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"
