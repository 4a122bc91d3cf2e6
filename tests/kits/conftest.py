"""What the kits' tests share: running the conformance kit on a kit's bot.

Each kit's test (tests/kits/test_<lang>.py) builds its kit, then runs its bot
through ``mammamia conformance --json`` and asserts that every scenario passed.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
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
