"""The ladder-reads benchmark (bench/ladder_reads.py) runs at a tiny size through
``python -m bench``, so it cannot rot; its fill agrees with the store. Speed is never
asserted here."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bench.ladder_reads import fill
from server.db.ladder.rows import ALL_PLAYERS
from server.db.ladder.store import LadderStore
from server.status import MatchStatus

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv" / "bin" / "python"


def test_the_bulk_fill_is_a_ladder_the_store_agrees_with(tmp_path: Path) -> None:
    path = tmp_path / "bench.db"
    filled = fill(path, matches=300, bots=12)
    assert filled["matches"] == 300 and filled["results"] >= 600
    store = LadderStore(path)
    try:
        for players in (ALL_PLAYERS, 2, 3, 4, 5):
            assert store.tallies(players) == store.recount(players)
            assert store.rated(players) == len(store.rated_results(players))
        assert store.unrated() == 0 and store.running() == []
        assert len(store.matches("bot-000", 20, MatchStatus.FINISHED)) == 20
    finally:
        store.close()


def test_the_benchmark_measures_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    run = subprocess.run(
        [str(PYTHON), "-m", "bench", "--quick", "--only", "ladder_reads", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "== ladder_reads" in run.stdout
    # The store's schema upgrade is logged at info level: not a figure, so not shown.
    assert "database_schema_upgraded" not in run.stderr + run.stdout
    fig = json.loads(out.read_text(encoding="utf-8"))["ladder_reads"]
    for key in ("standings_p99_ms", "scheduling_pass_p99_ms", "decision_p99_ms_under_standings"):
        assert fig[key] > 0, key
    served = fig["served"]
    assert served["alone"]["decisions"] > 0 and served["under_standings"]["decisions"] > 0
    assert served["alone"]["errors"] == served["under_standings"]["errors"] == 0
    assert served["standings_calls"] > 0 and served["standings_errors"] == 0
    assert served["matches_finished_seen"] == fig["stored_matches"]
