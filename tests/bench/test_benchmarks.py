"""Smoke tests of the benchmarks: each runs at a tiny size through ``python -m bench``,
so none can rot. Speed is never asserted here, only that every figure was measured
and written where ``make bench BENCH_OUT=FILE`` puts it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv" / "bin" / "python"
RUN_TIMEOUT_S = 180

# The figures the benchmark issue names, per benchmark.
KEYS = {
    "protocol": ("bare_p50_us", "server_p50_us", "ratio_p50", "server_p99_us"),
    "load": (
        "matches",
        "seats",
        "decisions_per_s",
        "p50_ms",
        "p99_ms",
        "server_rss_mb",
        "errors",
        "max_seats_p99_under_100ms",
        "rss_kb_per_seat",
        "rss_timeline_mb",
        "rss_growth_second_half_mb",
    ),
    "ladder": ("matches_per_min", "rating_update_ms"),
}


def quick(tmp_path: Path, *names: str) -> dict[str, Any]:
    """Returns the JSON figures of ``python -m bench --quick --only NAMES``."""
    out = tmp_path / "figures.json"
    run = subprocess.run(
        [
            str(PYTHON if PYTHON.exists() else sys.executable),
            "-m",
            "bench",
            "--quick",
            "--only",
            *names,
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    # The bots the benchmarks drive log each decision at debug level (the search bot
    # as search_decision): the tables are not to be buried in such lines.
    assert "search_decision" not in run.stderr + run.stdout
    for name in names:
        assert f"== {name}" in run.stdout, run.stdout
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert isinstance(report["machine"], str) and "cores" in report["machine"]
    assert report["machine_info"]["cores"] >= 1
    return report


def test_engine_reports_games_per_second_for_two_to_five_players(tmp_path: Path) -> None:
    report = quick(tmp_path, "engine")
    assert set(report["engine_games_per_s"]) == {"2", "3", "4", "5"}
    assert all(v > 0 for v in report["engine_games_per_s"].values())


def test_protocol_measures_the_server_beside_a_bare_echo(tmp_path: Path) -> None:
    fig = quick(tmp_path, "protocol")["protocol"]
    assert set(KEYS["protocol"]) <= set(fig)
    assert fig["samples"]["bare"] >= 100 and fig["samples"]["server"] >= 100
    assert fig["bare_p50_us"] > 0 and fig["server_p50_us"] > 0
    assert fig["ratio_p50"] == pytest.approx(fig["server_p50_us"] / fig["bare_p50_us"], abs=0.01)
    assert fig["server_p99_us"] >= fig["server_p50_us"]
    # The server's pattern of messages, replayed by the echo: the request, and an
    # acknowledgement on its own only where the server sends one.
    assert fig["samples"]["pattern"] >= 100
    assert 1 <= fig["pattern_messages_per_request"] <= 2.1
    assert fig["answer_path"]["decisions"] > 0
    # The whole Play path in-process: real decisions, the client's share a part of it.
    play = fig["play_path"]
    assert play["decisions"] > 0 and play["p50_us"] > 0
    assert 0 < play["client_us"] < play["mean_us"]
    four = fig["play_path_4"]
    assert four["decisions"] > 0 and 0 < four["client_us"] < four["mean_us"]
    # The echo answers with a real decision request of the median size.
    assert fig["request_bytes"]["echo_reply"] > fig["answer_bytes"] > 0


def test_load_plays_matches_from_other_processes_without_errors(tmp_path: Path) -> None:
    fig = quick(tmp_path, "load")["load"]
    assert set(KEYS["load"]) <= set(fig)
    assert fig["seats"] == fig["matches"] * 4
    assert fig["errors"] == 0, fig["error_examples"]
    assert fig["decisions_per_s"] > 0
    assert fig["server_rss_mb"] > 0
    # RSS through the window: from its start to its end, in order.
    times = [t for t, _ in fig["rss_timeline_mb"]]
    assert len(times) >= 2 and times == sorted(times) and times[-1] >= 0.9
    assert all(mb > 0 for _, mb in fig["rss_timeline_mb"])
    assert [s["seats"] for s in fig["steps"]] == [fig["seats"]]
    # The probe's calls with an unknown token were refused, and timed.
    assert fig["play_refused_p50_ms"] > 0 and fig["join_refused_p50_ms"] > 0


def test_ceiling_runs_the_load_loop_against_the_bare_echo(tmp_path: Path) -> None:
    fig = quick(tmp_path, "ceiling")["ceiling"]
    [step] = fig["steps"]
    assert step["streams"] == 4 and step["errors"] == 0, step["error_samples"]
    assert step["round_trips_per_second"] > 0
    assert 0 < step["p50_ms"] <= step["p99_ms"]
    # Both sides' CPU was measured, per round trip.
    assert step["echo_cpu_us_per_round_trip"] > 0 and step["clients_cpu_us_per_round_trip"] > 0
    assert fig["target"] is None  # 250 streams were not among the counts


def test_the_ceilings_reply_is_a_decision_request_with_the_events_before_it() -> None:
    from bench.ceiling import seat_message
    from bench.crowd import decision_in
    from mammamia_pb import arena_pb2 as pb

    events = pb.SeatEvents.FromString(seat_message()).events
    # The request comes last, after the public events since the seat's previous one:
    # a client answers every reply, so the closed loop goes on.
    assert decision_in(events[-1]) is not None
    assert [decision_in(e) for e in events[:-1]] == [None] * (len(events) - 1)
    game = {"turn", "round_started", "round_ended", "resolved"}
    assert len(events) > 1 and {e.WhichOneof("event") for e in events[:-1]} <= game


def test_ladder_finishes_matches_and_times_a_rating_update(tmp_path: Path) -> None:
    fig = quick(tmp_path, "ladder")["ladder"]
    assert set(KEYS["ladder"]) <= set(fig)
    assert fig["throughput"]["aborted"] == 0
    assert fig["rating_update_ms"] > 0
    assert fig["rating_update"]["players"] == 5


def test_percentiles_are_nearest_rank() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.latency import percentile, summary

    ordered = list(range(1, 101))
    assert percentile(ordered, 50) == 50
    assert percentile(ordered, 99) == 99
    assert percentile(ordered, 100) == 100
    assert percentile([7], 1) == 7
    fig = summary([3000, 1000, 2000], scale=1000)
    assert (fig["n"], fig["mean"], fig["p50"], fig["max"]) == (3, 2.0, 2.0, 3.0)
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 50)


def test_search_times_its_decisions_and_counts_rollouts(tmp_path: Path) -> None:
    fig = quick(tmp_path, "search")["search"]
    (row,) = fig["rows"]
    assert row["budget_ms"] == 50 and row["decisions"] > 0
    assert 0 < row["ms_p50"] <= row["ms_p99"] <= row["ms_max"]
    assert 0 <= row["within_budget_plus_10pct"] <= 1
    # On a busy machine a decision may get no rollout in; a game's worth gets some.
    assert row["rollouts"] > 0 and row["rollouts_per_second"] > 0


def test_metrics_reports_what_counting_costs_a_decision(tmp_path: Path) -> None:
    fig = quick(tmp_path, "metrics")["metrics"]
    assert fig["answer_us_without"] > 0 and fig["answer_us_with"] > 0
    assert fig["cost_us"] == round(fig["answer_us_with"] - fig["answer_us_without"], 1)
    assert 0 < fig["answered_us"] < fig["answer_us_with"]
