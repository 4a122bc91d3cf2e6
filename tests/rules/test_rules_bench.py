"""The engine benchmark runs and reports its figures (speed itself is never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_python_m_bench_writes_the_engine_figures(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--only", "engine", "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert {"cpu", "cores", "python"} <= set(report["machine_info"])
    engine = report["engine"]["players"]
    assert sorted(engine) == ["2", "3", "4", "5"]
    for figures in engine.values():
        assert figures["games"] > 0 and figures["games_per_second"] > 0
    assert report["engine_games_per_s"] == {n: f["games_per_second"] for n, f in engine.items()}
    # The table names each player count on its own line.
    rows = [line.split() for line in done.stdout.splitlines()]
    assert [row[0] for row in rows if row and row[0] in engine] == ["2", "3", "4", "5"]
