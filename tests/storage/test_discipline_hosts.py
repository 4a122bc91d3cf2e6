"""Discipline on two hosts sharing one PostgreSQL database (the hosts of
tests/storage/test_hosts.py): a bot suspended through one host while the other runs
its match has its seat played by the default policy there, its entry ended, and is
refused on both; a match aborted through the host that does not run it is aborted
by the one that does; a match voided through one host leaves the
ratings both answer, and `ladder rerate` agrees with them."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from server.db.ladder.rows import player
from server.db.ladder.store import LadderStore
from server.ladder.ratings import replay
from tests.admin.test_discipline import admin, enter, ladder_matches
from tests.ladder.conftest import standings as standings_of
from tests.ports import restartable_port

from .test_hosts import MAMMAMIA, host_flags, rated, rows, same_standings, wait

THROUGH_A = {"random-a": "random", "greedy-a": "greedy", "counter-a": "counter"}
THROUGH_B = {"greedy-b": "greedy", "random-b": "random"}

#: A bot that thinks a while each turn (in time), so that its matches last seconds.
PONDERING_BOT = """
import time

from client_sdk import Bot


class Pondering(Bot):
    name = "pondering"

    def turn(self, view):
        time.sleep(0.1)
        return view.legal[0]
"""


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
    pondering = tmp_path / "pondering.py"
    pondering.write_text(PONDERING_BOT)
    through_a = {**THROUGH_A, "slow-a": f"{pondering}:Pondering"}
    through_b = {**THROUGH_B, "slow-b": f"{pondering}:Pondering"}
    bots = {**ladder_bots(a.address, through_a), **ladder_bots(b.address, through_b)}
    wait(lambda: rated(a.address) >= 6, 90, "6 rated matches")

    # Suspended through A while it plays a match B runs: B plays its seat by the
    # default policy, the host of its entry ends it, and both hosts refuse it.
    def slow_on_b() -> list[tuple[Any, ...]]:
        return rows(
            postgres_url,
            "SELECT r.name, m.match_id FROM ladder_matches m JOIN ladder_results r"
            " ON r.match_id = m.match_id WHERE m.status = 'running' AND m.host = 'host-b'"
            " AND r.name = 'slow-b' AND m.created > ?",
            time.time() - 1,
        )

    name, match_id = wait(slow_on_b, 90, "a match of slow-b starting on host B")[0]
    done = admin(a.address, "suspend", name, "--reason", "a fault on its side", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "operator": "organiser",
        "changed": True,
        "match_id": match_id,
        "aborted": False,
        "host_address": f"127.0.0.1:{port_b}",
    }
    suspended_at = time.time()
    wait(
        lambda: any(
            e.get("bot") == name and e.get("match") == match_id
            for e in (
                json.loads(line)
                for line in b.logs().splitlines()
                if '"ladder_seat_benched"' in line
            )
        ),
        10,
        "host B to bench the seat",
    )
    assert bots[name].wait(timeout=30) != 0
    key = (tmp_path / f"{name}.key").read_text().strip()
    for host in (a, b):
        refused = enter(host.address, name, key)
        assert refused is not None and refused.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "a fault on its side" in str(refused.details())
        lines = {s.name: s.suspended for s in standings_of(host.address).standings}
        assert lines[name] == "a fault on its side"

    # Aborted through B, a match A runs: A aborts it within a beat.
    def slow_on_a() -> list[tuple[Any, ...]]:
        return rows(
            postgres_url,
            "SELECT m.match_id FROM ladder_matches m JOIN ladder_results r"
            " ON r.match_id = m.match_id WHERE m.status = 'running' AND m.host = 'host-a'"
            " AND r.name = 'slow-a' AND m.created > ?",
            time.time() - 1,
        )

    (aborted,) = wait(slow_on_a, 90, "a match of slow-a starting on host A")[0]
    done = admin(b.address, "abort", aborted, "--reason", "a test", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["host_address"] == f"127.0.0.1:{port_a}"
    wait(
        lambda: (
            rows(postgres_url, "SELECT status FROM ladder_matches WHERE match_id = ?", aborted)
            == [("aborted",)]
        ),
        10,
        "host A to abort the match",
    )
    assert "ladder_match_aborted_as_asked" in a.logs()

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
        "SELECT COUNT(*) FROM ladder_results WHERE name = ? AND created > ?",
        name,
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
            assert abs(recomputed[player(line.name, line.version)].mu - line.mu) < 1e-9, line.name
    finally:
        store.close()
