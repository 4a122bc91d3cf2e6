"""The operators' switches on a real ladder: pause and resume, close and open
registration, through `mammamia admin`, on one host (SQLite) and on two hosts
sharing PostgreSQL.

Checked: a pause lets the running matches finish and forms no new match for as
long as it lasts, while the bots stay entered and are told why they wait; resume
restarts the matches; a closed registration refuses a new name with
FAILED_PRECONDITION and the operator's reason, and an open one takes it; an
operator's closing and a competition's phase go through the same check; the audit
log lists every change with its operator and reason. On two hosts a switch turned
through one host holds on the other."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.admin.switches import RESUMED, closed_message, paused_notice
from tests.conftest import ORGANISER_KEY
from tests.ladder.conftest import query, wait_until
from tests.ports import restartable_port
from tests.storage.test_hosts import logged, rows

from .test_operators import admin, log, mammamia

SIX = {
    "random-a": "random",
    "greedy-a": "greedy",
    "counter-a": "counter",
    "random-b": "random",
    "greedy-b": "greedy",
    "counter-b": "counter",
}
#: How long a pause is watched for a match that should not form: the lobby forms a
#: table within its settle time (0.25 s) of bots waiting, so this is many chances.
QUIET_S = 3.0

Count = Callable[[str], int]

#: A competition in its registration phase for an hour: the ladder forms tables.
COMPETITION = """
name = "later"
players = 2
[schedule]
registration = 0
ladder = 3600
freeze = 7200
finals = 7300
[finals]
field = 2
top = 2
budget = 10
tables = 2
"""


def switch(address: str, command: str, reason: str, key: str = ORGANISER_KEY) -> None:
    done = admin(address, key, command, "--reason", reason)
    assert done.returncode == 0, done.stderr


def register(address: str, name: str) -> grpc.RpcError | None:
    """Returns the error a Register of ``name`` gets, or None when it is taken."""
    with grpc.insecure_channel(address) as channel:
        try:
            pb_grpc.LadderStub(channel).Register(pb.RegisterRequest(name=name), timeout=10)
        except grpc.RpcError as e:
            return e
    return None


def notices(bots: Path, name: str) -> list[str]:
    """Returns the notices a bot process logged from its Enter stream."""
    return [
        str(e["notice"]) for e in logged(bots / f"{name}.log") if e.get("event") == "ladder_notice"
    ]


def pause_and_resume(hosts: Sequence[str], count: Count, bots: Path, names: Sequence[str]) -> None:
    """Pauses through the first host and resumes through the last: no match forms on
    any host while paused; every bot is told why it waits, then that it no longer
    does; matches form again. ``count(status)`` counts the ladder's matches."""
    wait_until(lambda: count("finished") >= 3, 90, "3 finished ladder matches")
    switch(hosts[0], "pause", "the database moves")
    wait_until(lambda: count("running") == 0, 60, "the running matches to finish")
    formed = count("")
    time.sleep(QUIET_S)
    assert count("") == formed, "a match formed while the ladder was paused"
    paused = paused_notice("the database moves")
    wait_until(
        lambda: all(paused in notices(bots, n) for n in names), 10, "every bot told of the pause"
    )
    switch(hosts[-1], "resume", "the database moved")
    wait_until(lambda: count("") > formed, 60, "a new match after the resume")
    wait_until(
        lambda: all(notices(bots, n)[-1:] == [RESUMED] for n in names),
        10,
        "every bot told the ladder resumed",
    )


def close_and_open(hosts: Sequence[str]) -> None:
    """Closes registration through the first host and opens it through the last:
    every host refuses a new name while closed, with the reason, and takes it after."""
    switch(hosts[0], "close-registration", "the field is full")
    for address in hosts:
        refused = register(address, "late-bot")
        assert refused is not None, address
        assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert refused.details() == closed_message("the field is full")
    switch(hosts[-1], "open-registration", "one more seat")
    assert register(hosts[0], "late-bot") is None


def audited(address: str) -> list[tuple[str, str, str]]:
    """Returns (operator, action, reason) of each switch change on the audit log."""
    return [
        (e["operator"], e["action"], e["reason"])
        for e in log(address)
        if e["action"].startswith(("ladder.", "registration."))
    ]


EXPECTED = [
    ("organiser", "ladder.pause", "the database moves"),
    ("organiser", "ladder.resume", "the database moved"),
    ("organiser", "registration.close", "the field is full"),
    ("organiser", "registration.open", "one more seat"),
]


def test_pause_resume_and_registration_on_one_host(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    server = start_server(ladder_concurrency=2, ladder_players="2-3", no_web=True)
    processes = ladder_bots(server.address, SIX)

    def count(status: str) -> int:
        sql = "SELECT COUNT(*) FROM ladder_matches" + (" WHERE status = ?" if status else "")
        return int(query(server.db_path, sql, *([status] if status else []))[0][0])

    pause_and_resume([server.address], count, tmp_path / "bots", list(SIX))
    assert all(p.poll() is None for p in processes.values()), "a bot left while paused"
    close_and_open([server.address])
    assert audited(server.address) == EXPECTED

    # A pause outlives a restart: the switches are the database's.
    switch(server.address, "pause", "over the night")
    server.stop()
    server.start()
    status = admin(server.address, ORGANISER_KEY, "status", "--json")
    assert status.returncode == 0, status.stderr
    on = {s["name"]: (s["on"], s["reason"]) for s in json.loads(status.stdout)["switches"]}
    assert on["ladder_paused"] == (True, "over the night")


def test_a_pause_holds_a_competitions_ladder_whose_phase_frees_it(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    # The competition's phase lets the ladder form tables, and says so at every tick:
    # the pause holds all the same, until it is resumed.
    path = tmp_path / "open.toml"
    path.write_text(COMPETITION, encoding="utf-8")
    server = start_server(competition=path, ladder_concurrency=2, no_web=True)
    four = dict(list(SIX.items())[:4])
    ladder_bots(server.address, four)

    def count(status: str) -> int:
        sql = "SELECT COUNT(*) FROM ladder_matches" + (" WHERE status = ?" if status else "")
        return int(query(server.db_path, sql, *([status] if status else []))[0][0])

    pause_and_resume([server.address], count, tmp_path / "bots", list(four))


def test_an_operator_and_a_competition_close_registration_through_one_check(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    path = tmp_path / "later.toml"
    path.write_text(COMPETITION, encoding="utf-8")
    server = start_server(competition=path, no_web=True)
    assert register(server.address, "ann") is None
    switch(server.address, "close-registration", "a pause in entries")
    refused = register(server.address, "bo")
    assert refused is not None and refused.details() == closed_message("a pause in entries")
    switch(server.address, "open-registration", "entries again")
    assert register(server.address, "bo") is None
    done = mammamia(
        *("competition", "advance", "--server", server.address),
        *("--organiser-key", ORGANISER_KEY, "--reason", "everyone is in"),
    )
    assert done.returncode == 0, done.stderr
    refused = register(server.address, "cy")
    assert refused is not None and refused.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "ladder phase" in (refused.details() or "")
    advanced = [e for e in log(server.address) if e["action"] == "competition.advance"]
    assert [(e["operator"], e["target"], e["reason"], e["details"]) for e in advanced] == [
        ("organiser", "later", "everyone is in", {"phase": "ladder"})
    ]


@pytest.mark.timeout(240)
def test_pause_resume_and_registration_on_two_hosts_sharing_postgresql(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    postgres_url: str,
    tmp_path: Path,
) -> None:
    options: dict[str, Any] = {"db": postgres_url, "ladder_players": "2-3", "no_web": True}
    hosts = []
    for name in ("host-a", "host-b"):
        port = restartable_port()
        args = ["--port", str(port), "--advertise", f"127.0.0.1:{port}", "--host-id", name]
        hosts.append(start_server(**options, ladder_concurrency=1, args=args))
    a, b = hosts
    names = list(SIX)
    ladder_bots(a.address, {n: SIX[n] for n in names[:3]})
    ladder_bots(b.address, {n: SIX[n] for n in names[3:]})

    def count(status: str) -> int:
        sql = "SELECT COUNT(*) FROM ladder_matches" + (" WHERE status = ?" if status else "")
        return int(rows(postgres_url, sql, *([status] if status else []))[0][0])

    pause_and_resume([a.address, b.address], count, tmp_path / "bots", names)
    close_and_open([a.address, b.address])
    # One trail, read alike through either host.
    assert audited(a.address) == audited(b.address) == EXPECTED
