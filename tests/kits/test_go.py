"""The Go kit (kits/go): it builds from protos/ with its pinned plugins, its unit
tests pass, its starter bot passes every conformance scenario, and on a real ladder
it registers into its key file, plays its assignments to their end and stops with
one line and status 1 when its key is refused; it plays a seat over TLS trusting a
CA file.

The kit is built by its Makefile stamp (``make install`` and ``make test`` build it
too); without a ``go`` the tests are skipped.
"""

from __future__ import annotations

import fcntl
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from server.conformance import cli
from tests.kits.conftest import ROOT, Conformance, failures, tls_seat_against_random

KIT = ROOT / "kits" / "go"
STARTER = KIT / "bin" / "starter"
RUN_TIMEOUT_S = 120

# A first build from empty caches (run by the first test that needs the starter, when
# `make test` has not built it already) may take minutes on a busy machine.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="session")
def go() -> str:
    """Returns the path of `go`; skips the test when there is none."""
    path = shutil.which("go")
    if path is None:
        pytest.skip("go is not installed: the Go kit cannot be built here")
    return path


@pytest.fixture(scope="session")
def starter(go: str) -> Path:
    """Returns the built starter bot, building the kit first (through its stamp, so an
    up-to-date kit is not built again; a lock keeps parallel workers from building at
    once)."""
    with open(ROOT / ".venv" / ".go-kit.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run(
            ["make", "--no-print-directory", "kits/go/bin/.built"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert STARTER.is_file(), done.stdout + done.stderr
    return STARTER


def test_the_go_kit_unit_tests_pass(starter: Path, go: str) -> None:
    done = subprocess.run(
        [go, "test", "-buildvcs=false", "./..."],
        cwd=KIT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "FAIL" not in done.stdout


def test_the_go_starter_passes_every_conformance_scenario_single_seat_and_ladder(
    starter: Path, conformance: Conformance
) -> None:
    code, report, err = conformance(
        f"{starter} --server {{server}} --token {{token}}",
        "--ladder-client",
        f"{starter} --server {{server}} --ladder --name {{name}} --key-file {{key_file}}",
    )
    assert {r["name"] for r in report.get("scenarios", [])} == {*cli.NAMES, *cli.LADDER_NAMES}, err[
        -2000:
    ]
    assert code == 0 and report["passed"], failures(report)


def run_ladder(starter: Path, server: Any, *args: str) -> subprocess.CompletedProcess[str]:
    """Returns the finished ladder run of the starter bot (it leaves after its assignments)."""
    return subprocess.run(
        [str(starter), "--server", server.address, "--ladder", "--name", "go-ladder", *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def test_the_go_starter_registers_enters_and_plays_its_assignments(
    starter: Path, start_server: Any, ladder_bots: Any, tmp_path: Path
) -> None:
    server = start_server(ladder_concurrency=2, ladder_players="2-3")
    ladder_bots(server.address, {"py-random-1": "random", "py-random-2": "random"})
    key_file = tmp_path / "go-ladder.key"

    first = run_ladder(starter, server, "--key-file", str(key_file), "--matches", "2")
    assert first.returncode == 0, first.stderr[-3000:]
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.read_text().strip()
    assert "msg=registered" in first.stderr
    assert len(re.findall(r"msg=match_ended .*status=finished", first.stderr)) == 2
    # Seats are taken on one PlayMatches call (the second may go on Play when it is
    # assigned while the first match still runs).
    assert "msg=seat_taken" in first.stderr

    # Back with the key from the file: no second registration.
    again = run_ladder(starter, server, "--key-file", str(key_file), "--matches", "1")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "msg=registered" not in again.stderr
    assert len(re.findall(r"msg=match_ended .*status=finished", again.stderr)) == 1


def test_the_go_starter_with_a_refused_key_stops_with_one_line_and_status_1(
    starter: Path, start_server: Any, tmp_path: Path
) -> None:
    server = start_server()
    key_file = tmp_path / "wrong.key"
    key_file.write_text("not-the-key\n")
    done = run_ladder(starter, server, "--key-file", str(key_file), "--retry-for", "5s")
    assert done.returncode == 1, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert re.fullmatch(
        r'starter: ladder refused "go-ladder": (Unauthenticated|PermissionDenied): .*', last
    ), done.stderr[-3000:]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_the_go_starter_plays_a_seat_over_tls_with_a_ca_file(
    starter: Path, start_server: Any, self_signed_certificate: tuple[Path, Path]
) -> None:
    key, cert = self_signed_certificate
    server = start_server(tls_cert=cert, tls_key=key)
    with tls_seat_against_random(server, cert) as seat:
        mine = subprocess.run(
            [str(starter), *seat, "--retry-for", "10s"],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        assert mine.returncode == 0, mine.stderr[-3000:]
        assert re.search(r"msg=match_ended .*status=finished", mine.stderr), mine.stderr[-3000:]
