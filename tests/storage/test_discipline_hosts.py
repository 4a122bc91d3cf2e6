"""Discipline on two hosts sharing one PostgreSQL database (the hosts of
tests/storage/test_hosts.py): a bot suspended through one host has its entry on the
other ended and is refused on both; a match voided through one host leaves the
ratings both answer, and `ladder rerate` agrees with them; an abort through the host
that does not run the match names the one that does."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from server.db.ladder.store import LadderStore
from server.ladder.ratings import replay
from tests.admin.test_discipline import admin, enter, ladder_matches
from tests.ladder.conftest import standings as standings_of
from tests.ports import restartable_port

from .test_hosts import MAMMAMIA, host_flags, rated, rows, same_standings, wait

THROUGH_A = {"random-a": "random", "greedy-a": "greedy", "counter-a": "counter"}
THROUGH_B = {"greedy-b": "greedy", "random-b": "random"}


def test_suspensions_and_voids_hold_on_both_hosts(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., Any],
    postgres_url: str,
    tmp_path: Path,
) -> None:
    port_a, port_b = restartable_port(), restartable_port()
    options = {"db": postgres_url, "ladder_players": "2", "no_web": True}
    a = start_server(**options, ladder_concurrency=2, **host_flags(port_a, "host-a"))
    b = start_server(**options, ladder_concurrency=1, **host_flags(port_b, "host-b"))
    ladder_bots(a.address, THROUGH_A)
    through_b = ladder_bots(b.address, THROUGH_B)
    wait(lambda: rated(a.address) >= 6, 90, "6 rated matches")

    # Suspended through A, the bot entered through B: B ends its entry, both refuse it.
    done = admin(a.address, "suspend", "random-b", "--reason", "a fault on its side")
    assert done.returncode == 0, done.stderr
    suspended_at = time.time()
    assert through_b["random-b"].wait(timeout=30) != 0
    key = (tmp_path / "random-b.key").read_text().strip()
    for host in (a, b):
        refused = enter(host.address, "random-b", key)
        assert refused is not None and refused.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "a fault on its side" in str(refused.details())
        lines = {s.name: s.suspended for s in standings_of(host.address).standings}
        assert lines["random-b"] == "a fault on its side"

    # An abort through the host that does not run the match names the one that does.
    for _attempt in range(10):
        running = rows(
            postgres_url,
            "SELECT match_id FROM ladder_matches WHERE status = 'running' AND host = 'host-a'",
        )
        if not running:
            time.sleep(0.2)
            continue
        elsewhere = admin(b.address, "abort", running[0][0], "--reason", "a test")
        if "FAILED_PRECONDITION" in elsewhere.stderr:
            assert f"127.0.0.1:{port_a}" in elsewhere.stderr
            break
    else:
        raise AssertionError("no abort through host B found a match running on host A")

    # Voided through B: both hosts answer the same standings, without it.
    before = rated(a.address)
    wait(lambda: rated(a.address) >= before + 2, 60, "2 more rated matches")
    match = ladder_matches(a.address)[3]
    done = admin(b.address, "void", match.match_id, "--reason", "the database hiccuped")
    assert done.returncode == 0, done.stderr
    listed = {m.match_id: m for m in ladder_matches(a.address)}[match.match_id]
    assert listed.voided and listed.voided_by == "organiser"
    done = admin(a.address, "pause", "--reason", "to compare the hosts")
    assert done.returncode == 0, done.stderr
    wait(
        lambda: (
            rows(postgres_url, "SELECT COUNT(*) FROM ladder_matches WHERE status = 'running'")
            == [(0,)]
        ),
        60,
        "the running matches to end",
    )
    wait(lambda: same_standings(a.address, b.address), 30, "the same standings on both")
    live = standings_of(a.address)
    # The suspended bot played no match that began after its suspension.
    later = rows(
        postgres_url,
        "SELECT COUNT(*) FROM ladder_results WHERE name = 'random-b' AND created > ?",
        suspended_at + 1,
    )
    assert later == [(0,)]
    assert a.stop() == 0 and b.stop() == 0

    rerate = subprocess.run(
        [str(MAMMAMIA), "ladder", "rerate", "--db", postgres_url],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert rerate.returncode == 0, rerate.stdout + rerate.stderr
    store = LadderStore(postgres_url)
    try:
        results = store.rated_results()
        assert len(results) == live.matches_finished
        recomputed = replay(results)
        for line in live.standings:
            assert abs(recomputed[line.name].mu - line.mu) < 1e-9, line.name
    finally:
        store.close()
