"""The organiser moves a competition on before its schedule: each change is stamped
with who and why, registration closes with the phase named, the freeze fixes the
field, and nothing moves backwards."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from tests.conftest import ORGANISER_KEY
from tests.ladder.conftest import MAMMAMIA

LATER = """
name = "later"
players = 2
[schedule]
registration = 0
ladder = 3600
freeze = 7200
finals = 7300
[finals]
field = ["ann", "bo"]
top = 2
budget = 10
tables = 2
"""


def advance(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(MAMMAMIA),
            "competition",
            "advance",
            "--server",
            address,
            "--json",
            "--organiser-key",
            ORGANISER_KEY,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def register(address: str, name: str) -> grpc.StatusCode:
    with grpc.insecure_channel(address) as channel:
        try:
            pb_grpc.LadderStub(channel).Register(pb.RegisterRequest(name=name), timeout=30)
        except grpc.RpcError as e:
            return e.code()
    return grpc.StatusCode.OK


def test_the_organiser_advances_phases_stamped_with_a_reason(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    path = tmp_path / "later.toml"
    path.write_text(LATER, encoding="utf-8")
    server = start_server(competition=path, no_web=True)
    address = server.address
    assert register(address, "ann") == grpc.StatusCode.OK

    moved = advance(address, "--reason", "every entrant is in")
    assert moved.returncode == 0, moved.stderr
    data = json.loads(moved.stdout)
    assert data["phase"] == "ladder"
    assert data["stamps"][-1]["who"] == "organiser"
    assert data["stamps"][-1]["reason"] == "every entrant is in"
    assert register(address, "bo") == grpc.StatusCode.FAILED_PRECONDITION

    frozen = json.loads(advance(address, "--reason", "early freeze", "--to", "freeze").stdout)
    assert frozen["phase"] == "freeze"
    # The field is fixed by the server's next tick.
    deadline = 50
    while not frozen["field"] and deadline:
        frozen = json.loads(
            subprocess.run(
                [str(MAMMAMIA), "competition", "status", "--server", address, "--json"],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            ).stdout
        )
        deadline -= 1
    assert frozen["field"] == ["ann", "bo"]

    back = advance(address, "--reason", "oops", "--to", "ladder")
    assert back.returncode == 1 and "FAILED_PRECONDITION" in back.stderr
    assert "freeze phase" in back.stderr
    early = subprocess.run(
        [
            str(MAMMAMIA),
            "competition",
            "release",
            "--server",
            address,
            "--organiser-key",
            ORGANISER_KEY,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert early.returncode == 1 and "FAILED_PRECONDITION" in early.stderr
    wrong = subprocess.run(
        [
            str(MAMMAMIA),
            "competition",
            "advance",
            "--server",
            address,
            "--reason",
            "x",
            "--organiser-key",
            "not-the-key",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert wrong.returncode == 1 and "PERMISSION_DENIED" in wrong.stderr

    # The stamps outlive a restart, and the competition goes on where it was.
    server.restart()
    with grpc.insecure_channel(server.address) as channel:
        reply = pb_grpc.CompetitionStub(channel).Status(pb.CompetitionStatusRequest())
    assert reply.phase == pb.COMPETITION_PHASE_FREEZE
    assert [s.who for s in reply.stamps] == ["schedule", "organiser", "organiser"]


@pytest.mark.parametrize("phase", ["registration", "closed"])
def test_advance_names_only_known_phases(phase: str) -> None:
    from server.competition.cli_wire import advance_request

    request = advance_request("why", phase)
    assert request.to != pb.COMPETITION_PHASE_UNSPECIFIED


TOP_K = LATER.replace('field = ["ann", "bo"]', "field = 4")


def status(address: str) -> dict[str, Any]:
    reply = subprocess.run(
        [str(MAMMAMIA), "competition", "status", "--server", address, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    data: dict[str, Any] = json.loads(reply.stdout)
    return data


def until(address: str, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Returns the competition's status once ``done`` holds (the server's tick acts
    on a phase change within a quarter second); fails after about 30 s."""
    data = status(address)
    for _ in range(300):
        if done(data):
            return data
        time.sleep(0.1)
        data = status(address)
    raise AssertionError(f"the competition never got there: {data}")


def test_bots_with_no_ladder_match_make_the_field_at_a_freeze_before_any_match(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    path = tmp_path / "top.toml"
    path.write_text(TOP_K, encoding="utf-8")
    server = start_server(competition=path, no_web=True)
    for name in ("cy", "ann", "bo"):
        assert register(server.address, name) == grpc.StatusCode.OK
    assert advance(server.address, "--reason", "now", "--to", "freeze").returncode == 0

    frozen = until(server.address, lambda d: bool(d["field"]))
    # No ladder match was played: the field is every registered bot, in the order
    # they registered, and the competition stays in its freeze.
    assert frozen["field"] == ["cy", "ann", "bo"]
    assert frozen["phase"] == "freeze"


def test_a_freeze_with_one_bot_registered_closes_the_competition_with_why(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    path = tmp_path / "top.toml"
    path.write_text(TOP_K, encoding="utf-8")
    server = start_server(competition=path, no_web=True)
    assert register(server.address, "ann") == grpc.StatusCode.OK
    assert advance(server.address, "--reason", "now", "--to", "freeze").returncode == 0

    closed = until(server.address, lambda d: d["phase"] == "closed")
    last = closed["stamps"][-1]
    assert last["who"] == "finals"
    assert "two finalists" in last["reason"] and "1 bot registered" in last["reason"]
    assert not closed["field"]
    # Said once, not at every tick after (a status call lasts several ticks).
    for _ in range(3):
        status(server.address)
    assert server.logs().count('"competition_no_finals"') == 1
