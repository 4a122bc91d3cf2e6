"""What the kits' tests share: running the conformance kit on a kit's bot.

Each kit's test (tests/kits/test_<lang>.py) builds its kit, then runs its bot
through ``mammamia conformance --json`` and asserts that every scenario passed.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAMMAMIA = ROOT / ".venv" / "bin" / "mammamia"

Conformance = Callable[..., tuple[int, dict[str, Any], str]]


@pytest.fixture(scope="session")
def conformance() -> Conformance:
    """Returns ``run(client, *args)``: the exit code, the JSON report and the stderr of
    ``mammamia conformance --client CLIENT --json ARGS...`` (e.g. ``--only resume``)."""

    def run(client: str, *args: str) -> tuple[int, dict[str, Any], str]:
        done = subprocess.run(
            [str(MAMMAMIA), "conformance", "--client", client, "--json", *args],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
        )
        report = json.loads(done.stdout) if done.stdout.strip() else {}
        return done.returncode, report, done.stderr

    return run


def failures(report: dict[str, Any]) -> str:
    """Returns the report's failed scenarios, one line each with the client's stderr tail."""
    return "\n".join(
        f"{r['name']}: {r['why']}" + "".join(f"\n    {line}" for line in r["stderr_tail"])
        for r in report.get("scenarios", [])
        if not r["passed"]
    )


@contextmanager
def tls_seat_against_random(server: Any, cert: Path) -> Iterator[list[str]]:
    """Creates a two-player match on ``server`` over TLS (trusting ``cert``), plays its
    second seat with ``mammamia bot random`` and yields the arguments that play the
    first: ``--server ADDR --tls-ca CERT --token TOKEN``. Waits for the random bot
    on the way out."""
    tls = ["--server", server.address, "--tls-ca", str(cert)]
    organiser = ["--organiser-key", server.organiser_key]
    created = subprocess.run(
        [str(MAMMAMIA), "match", "create", *tls, "--players", "2", *organiser],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    tokens = json.loads(created.stdout)["tokens"]
    other = subprocess.Popen(
        [str(MAMMAMIA), "bot", "random", *tls, f"--token={tokens[1]}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield [*tls, "--token", tokens[0]]
    finally:
        other.wait(timeout=30)
