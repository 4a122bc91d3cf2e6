"""docs/examples/quick-competition.toml on PostgreSQL with two hosts: two real
``mammamia serve --competition`` processes on one database, six built-in bots
entering the ladder through the CLI, three through each host.

The organiser moves the competition from registration to the finals (through one
host or the other) once the bots are in and have played, so that a slow start of
the bots never leaves the field short; the finals end it on their own.

Checked: every phase is stamped once (one host drives the phases at a time, both
follow the stamps); Register is refused on both hosts once registration has
closed, naming the phase; the finals, run by one host, seat the bots entered
through the other through the shared lobby, nobody absent; the finals stop with a
stated reason and every finals match has its result once; both hosts answer the
same held status, and the release made through one is seen through the other;
``mammamia competition export`` from the shared database writes a bundle that
``mammamia verify`` accepts."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from tests.ladder.conftest import MAMMAMIA, wait_until
from tests.ports import restartable_port
from tests.storage.test_hosts import logged, rows

from .test_quick_competition import SCHEDULE, competition, quick_file, status

THROUGH_A = {"random-1": "random", "greedy-1": "greedy", "counter-1": "counter"}
THROUGH_B = {"random-2": "random", "greedy-2": "greedy", "counter-2": "counter"}
PHASES = ["registration", "ladder", "freeze", "finals", "closed"]
#: The schedule's phases come late: the organiser moves the competition on first.
LATE = "registration = 0\nladder = 900\nfreeze = 910\nfinals = 912\nclosed = 1200\n"


def host(port: int, name: str) -> dict[str, Any]:
    """Returns the serve options of a host with a fixed port and host id."""
    return {"args": ["--port", str(port), "--advertise", f"127.0.0.1:{port}", "--host-id", name]}


def exported_and_verified(db: str, out: Path) -> dict[str, Any]:
    """Returns the manifest of the bundle ``mammamia competition export`` writes from
    ``db`` to ``out``, once ``mammamia verify`` has accepted it."""
    exported = subprocess.run(
        [str(MAMMAMIA), "competition", "export", "--db", db, str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert exported.returncode == 0, exported.stderr
    checked = subprocess.run(
        [str(MAMMAMIA), "verify", str(out)], capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    manifest: dict[str, Any] = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    return manifest


def two_hosts(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    postgres_url: str,
    tmp_path: Path,
    finals: dict[str, str] | None = None,
    args: Sequence[str] = (),
) -> tuple[Any, Any]:
    """Returns hosts A (which drives: it starts first) and B of the quick competition
    (its ``[finals]`` lines changed as ``finals`` says), with three bots entered
    through each, once the organiser has moved it to its ladder phase (all six
    registered) and Register is refused through either host."""
    text = quick_file(tmp_path).read_text(encoding="utf-8").replace(SCHEDULE, LATE)
    for line, changed in (finals or {}).items():
        assert line in text, line
        text = text.replace(line, changed)
    file = tmp_path / "two-hosts.toml"
    file.write_text(text, encoding="utf-8")
    options = {"db": postgres_url, "competition": file, "no_web": True}
    a = start_server(**options, args=[*host(restartable_port(), "host-a")["args"], *args])
    b = start_server(**options, args=[*host(restartable_port(), "host-b")["args"], *args])
    ladder_bots(a.address, THROUGH_A)
    ladder_bots(b.address, THROUGH_B)
    wait_until(
        lambda: rows(postgres_url, "SELECT COUNT(*) FROM ladder_bots") == [(6,)],
        120,
        "the six bots registered",
    )
    advance(b.address, "ladder", "every entrant is in")
    wait_until(lambda: status(a.address)["phase"] == "ladder", 10, "host A following")
    for address in (a.address, b.address):
        refused = refused_register(address)
        assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION, address
        assert "ladder phase" in (refused.details() or ""), refused.details()
    return a, b


def advance(address: str, phase: str, reason: str) -> None:
    """Moves the competition to ``phase`` as the organiser, through ``address``."""
    competition(address, "advance", "--to", phase, "--reason", reason, organiser=True)


def to_the_finals(a: Any, b: Any, postgres_url: str) -> None:
    """Freezes the ladder once a few of its matches have ended (through A), and
    starts the finals (through B) once the field is fixed."""
    wait_until(
        lambda: (
            rows(postgres_url, "SELECT COUNT(*) FROM ladder_matches WHERE status = 'finished'")
            >= [(3,)]
        ),
        120,
        "three ladder matches",
    )
    advance(a.address, "freeze", "the ladder has been played")
    wait_until(lambda: status(b.address)["field"], 30, "the field fixed")
    advance(b.address, "finals", "the field is fixed")


def refused_register(address: str) -> grpc.RpcError:
    """Returns the error a late Register gets from the host at ``address``."""
    with grpc.insecure_channel(address) as channel, pytest.raises(grpc.RpcError) as refused:
        pb_grpc.LadderStub(channel).Register(pb.RegisterRequest(name="late-bot"), timeout=10)
    return refused.value


@pytest.mark.timeout(180)
def test_the_quick_competition_runs_on_two_hosts_on_postgresql(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    postgres_url: str,
    tmp_path: Path,
) -> None:
    a, b = two_hosts(start_server, ladder_bots, postgres_url, tmp_path)
    to_the_finals(a, b, postgres_url)

    # The finals end on their own, with a reason, seen alike through both hosts.
    wait_until(lambda: status(a.address)["phase"] == "closed", 150, "the competition closed")
    wait_until(lambda: status(b.address)["phase"] == "closed", 10, "host B following")
    public = status(b.address)
    assert public["held"] and not public["released"] and public["standings"] == []
    assert sorted(public["field"]) == sorted({**THROUGH_A, **THROUGH_B})

    seen_a, seen_b = status(a.address, organiser=True), status(b.address, organiser=True)
    assert [s["phase"] for s in seen_a["stamps"]] == PHASES
    assert seen_b["stamps"] == seen_a["stamps"]
    stamped = rows(postgres_url, "SELECT phase, COUNT(*) FROM competition_stamps GROUP BY phase")
    assert dict(stamped) == dict.fromkeys(PHASES, 1)
    assert seen_a["final_reason"] in ("settled", "budget"), seen_a["final_reason"]
    assert seen_b["final_reason"] == seen_a["final_reason"]
    assert seen_b["standings"] == seen_a["standings"]
    assert [line["rank"] for line in seen_a["standings"]] == list(range(1, 7))
    matches = seen_a["matches"]
    assert len(matches) == seen_a["played"] > 0
    assert len({m["match"] for m in matches}) == len(matches)
    # Each finals match ended once, with its ranks; none is left running.
    assert (
        rows(
            postgres_url,
            "SELECT match_id, status FROM competition_matches"
            " WHERE status <> 'finished' OR ranks IS NULL",
        )
        == []
    )

    # One host ran the finals; the bots entered through the other were told of their
    # tables through the shared lobby and played them (nobody marked absent).
    assert [a for (a,) in rows(postgres_url, "SELECT absent FROM competition_matches")] == [
        "[]"
    ] * len(matches)
    for name in THROUGH_A | THROUGH_B:
        assigned = {
            event["match"]
            for event in logged(tmp_path / "bots" / f"{name}.log")
            if event.get("event") == "ladder_assignment"
        }
        assert {m["match"] for m in matches if name in m["names"]} <= assigned, name

    # Released through B, seen through A.
    competition(b.address, "release", organiser=True)
    released = status(a.address)
    assert released["released"] and not released["held"]
    assert released["standings"] == seen_a["standings"]

    # The export from the shared database verifies offline.
    manifest = exported_and_verified(postgres_url, tmp_path / "bundle")
    assert [s["phase"] for s in manifest["stamps"]] == PHASES
    assert manifest["final_table"]["stop"]["reason"] == seen_a["final_reason"]
    assert len(manifest["matches"]) == len(matches)
    assert a.stop() == 0 and b.stop() == 0


@pytest.mark.timeout(240)
def test_the_finals_outlive_the_host_that_drives_them(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    postgres_url: str,
    tmp_path: Path,
) -> None:
    """Host A drives the competition and is killed (SIGKILL) with a finals match
    running: host B takes the drive, marks the cut-off match aborted, reveals the
    tables A left sealed, plays on (A's bots now absent) to a stated end, and the
    export verifies."""
    # Absent finalists (A's bots, once A is gone) cost a short grace and start
    # timeout only; two rounds of finals are enough.
    shorter = {"budget = 36": "budget = 12", "grace = 5": "grace = 2"}
    a, b = two_hosts(
        start_server,
        ladder_bots,
        postgres_url,
        tmp_path,
        shorter,
        ["--ladder-start-timeout", "2"],
    )
    to_the_finals(a, b, postgres_url)

    def under_way() -> bool:
        ended = rows(postgres_url, "SELECT status FROM competition_matches")
        return ("finished",) in ended and ("running",) in ended

    wait_until(under_way, 90, "a finals match finished and another running")
    assert '"competition_driving"' not in b.logs()  # A drives: it started first
    a.kill()

    wait_until(lambda: status(b.address, organiser=True)["final_reason"], 180, "the finals' end")
    assert '"competition_driving"' in b.logs()
    seen = status(b.address, organiser=True)
    assert seen["final_reason"] in ("settled", "budget", "closed"), seen["final_reason"]
    assert [s["phase"] for s in seen["stamps"]] == PHASES
    # Nothing is left running or sealed: the cut-off match is aborted, the rest ended.
    statuses = [s for (s,) in rows(postgres_url, "SELECT status FROM competition_matches")]
    assert "running" not in statuses
    assert "aborted" in statuses
    assert statuses.count("finished") == seen["played"] > 0
    assert rows(postgres_url, "SELECT set_id FROM competition_tables WHERE revealed = 0") == []

    manifest = exported_and_verified(postgres_url, tmp_path / "bundle")
    assert "aborted" in [m["status"] for m in manifest["matches"]]
    assert b.stop() == 0
