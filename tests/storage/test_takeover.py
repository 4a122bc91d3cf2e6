"""A host killed (SIGKILL) and never started again loses no match: real ``mammamia
serve`` processes on one PostgreSQL database, with a short lease, and real ``mammamia
bot`` processes entered through the host that stays.

Checked: once the killed host's lease lapses, the other host takes its running
ladder matches over, resumes them from their journal and tells their bots where to
play (its own address, on their Enter streams); every one of them finishes there,
each result is stored once and rated once in finish order (``ladder rerate``
agrees), nothing is left running, and ``mammamia hosts list`` shows the killed host
lapsed with nothing of its own."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.ports import restartable_port

from .test_hosts import MAMMAMIA, logged, rows, wait

#: Seconds a host's lease runs: short, so that the takeover comes within the test.
LEASE_S = 2
BOTS = {
    "random-1": "random",
    "greedy-1": "greedy",
    "counter-1": "counter",
    "random-2": "random",
    "greedy-2": "greedy",
    "counter-2": "counter",
}


def flags(port: int, name: str) -> dict[str, Any]:
    return {
        "args": [
            *("--port", str(port), "--advertise", f"127.0.0.1:{port}"),
            *("--host-id", name, "--host-lease", str(LEASE_S)),
        ]
    }


def test_a_killed_host_that_never_comes_back_loses_no_match(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., Any],
    postgres_url: str,
    tmp_path: Path,
) -> None:
    options = {
        "db": postgres_url,
        "ladder_players": "2",
        "drain_seconds": 5,
        "ladder_start_timeout": 3,
        "ladder_deadline_ms": 1000,
    }
    a = start_server(**options, ladder_concurrency=3, **flags(restartable_port(), "host-a"))
    b = start_server(**options, ladder_concurrency=1, **flags(restartable_port(), "host-b"))
    # Every bot enters through B: A runs the matches its passes form, and their bots
    # play them at A's address until A is gone.
    ladder_bots(b.address, BOTS)

    def running_on_a() -> list[str]:
        return [
            m
            for (m,) in rows(
                postgres_url,
                "SELECT match_id FROM ladder_matches WHERE status = 'running' AND host = 'host-a'",
            )
        ]

    def journalled(matches: set[str]) -> set[str]:
        return {
            m
            for (m,) in rows(
                postgres_url,
                "SELECT match_id FROM match_setups WHERE match_id = ANY(?)",
                list(matches),
            )
        }

    for _attempt in range(5):
        wait(running_on_a, 30, "a ladder match running on host A")
        a.kill()  # and it never comes back
        cut = set(running_on_a())
        # (A match the kill caught between its pass and its journal's first write, a
        # moment, has nothing to resume from: it is aborted, as at a restart.)
        resumable = journalled(cut)
        if resumable:
            break
        a.start()
    assert resumable, "no kill -9 caught a journalled ladder match running on host A"
    killed = time.monotonic()

    def finished() -> set[str]:
        return {
            m
            for (m,) in rows(
                postgres_url, "SELECT match_id FROM ladder_matches WHERE status = 'finished'"
            )
        }

    wait(lambda: resumable <= finished(), 40, "host B to finish the matches A's kill cut off")
    took = time.monotonic() - killed
    wait(lambda: not set(running_on_a()), 10, "nothing left running as host A's")
    assert "host_taken_over" in b.logs() and "ladder_match_taken_over" in b.logs()
    assert {
        h
        for (h,) in rows(
            postgres_url, "SELECT DISTINCT host FROM matches WHERE id = ANY(?)", list(cut)
        )
    } == {"host-b"}
    # Their bots were told to play them on B (its seats name no other host now).
    told = {
        event["match"]
        for log in (tmp_path / "bots").glob("*.log")
        for event in logged(log)
        if event.get("event") == "ladder_assignment" and event.get("host") == b.address
    }
    assert resumable <= told
    assert b.stop() == 0

    # Every ladder match the server finished has its result once, rated once, in
    # finish order; nothing is left running; nothing aborted is rated.
    server_finished = {
        m
        for (m,) in rows(
            postgres_url, "SELECT id FROM matches WHERE ladder = 1 AND status = 'finished'"
        )
    }
    assert server_finished == finished()
    assert (
        rows(
            postgres_url,
            "SELECT match_id, host, status, rated FROM ladder_matches"
            " WHERE status = 'running' OR (status = 'finished' AND rated = 0)"
            " OR (status = 'aborted' AND rated = 1)",
        )
        == []
    )
    orders = [
        o
        for (o,) in rows(
            postgres_url,
            "SELECT finish_order FROM ladder_matches"
            " WHERE status = 'finished' ORDER BY finish_order",
        )
    ]
    assert orders == list(range(1, len(orders) + 1))
    games = dict(rows(postgres_url, "SELECT name, games FROM ladder_tallies WHERE players = 0"))
    seated = dict(
        rows(
            postgres_url,
            "SELECT r.name, COUNT(*) FROM ladder_results r"
            " JOIN ladder_matches m ON m.match_id = r.match_id"
            " WHERE m.status = 'finished' GROUP BY r.name",
        )
    )
    assert games == seated
    rerate = subprocess.run(
        [str(MAMMAMIA), "ladder", "rerate", "--db", postgres_url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rerate.returncode == 0, rerate.stdout + rerate.stderr

    listed = subprocess.run(
        [str(MAMMAMIA), "hosts", "list", "--db", postgres_url, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    hosts = {h["host"]: h for h in json.loads(listed.stdout)}
    assert hosts["host-a"]["lease"] == "lapsed" and hosts["host-a"]["unfinished"] == 0
    print(f"the cut-off matches finished on host B {took:.1f} s after the kill")
