"""The sequential test: its statistics, and ``mammamia arena A B --sprt`` on real bots."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from client_sdk.arena import run_sprt, sprt_plan
from mammamia.sprt import Sprt, elo, expected_score, pair_halves

MAMMAMIA = str(Path(sys.executable).with_name("mammamia"))


def test_bounds_are_walds_and_the_hypotheses_are_checked() -> None:
    lower, upper = Sprt(alpha=0.05, beta=0.05).bounds
    assert upper == pytest.approx(math.log(19)) and lower == pytest.approx(-math.log(19))
    lower, upper = Sprt(alpha=0.01, beta=0.1).bounds
    assert upper == pytest.approx(math.log(0.9 / 0.01)) and lower == pytest.approx(
        math.log(0.1 / 0.99)
    )
    with pytest.raises(ValueError, match="elo1 0 must be above elo0 5"):
        Sprt(elo0=5, elo1=0)
    with pytest.raises(ValueError, match=r"alpha 0\.5"):
        Sprt(alpha=0.5)
    with pytest.raises(ValueError, match="5 counts"):
        Sprt().llr([1, 2, 3])
    assert expected_score(0) == 0.5 and elo(expected_score(50)) == pytest.approx(50)


def test_the_llr_leans_to_the_hypothesis_the_pairs_fit() -> None:
    test = Sprt(elo0=0, elo1=50)
    assert test.llr([0, 0, 0, 0, 0]) == 0.0
    # B scores 3/4 of its games: far past elo1, so the ratio grows with the pairs.
    strong = [test.llr([0, 0, n, n, n]) for n in (1, 5, 25)]
    assert 0 < strong[0] < strong[1] < strong[2]
    # B scores exactly half: nearer elo0, so the ratio falls.
    even = [test.llr([n, n, n, n, n]) for n in (1, 5, 25)]
    assert 0 > even[0] > even[1] > even[2]
    assert test.decide(3.0) == "better" and test.decide(-3.0) == "not better"
    assert test.decide(0.0) is None
    # Every pair the same: still a finite ratio (the variance's pseudo-counts).
    assert math.isfinite(test.llr([0, 0, 0, 0, 10]))


def test_pair_scores_count_halves_from_both_seats() -> None:
    # (rank of A, rank of B) in each game: B wins, then ties.
    assert pair_halves((2, 1), (1, 1)) == 3
    assert pair_halves((1, 2), (1, 2)) == 0
    assert pair_halves((2, 1), (1, 2)) == 2
    plan = list(sprt_plan(seed=3, cap=7))
    assert len(plan) == 6  # whole pairs only
    assert [p[1] for p in plan[:2]] == [(0, 1), (1, 0)]
    assert plan[0][2] == plan[1][2] != plan[2][2]  # a pair shares its deal


def _simulate(test: Sprt, score: float, rng: random.Random, cap: int = 4000) -> str | None:
    """Returns the decision of one simulated test in which B's games are independent
    wins with chance ``score`` (no draws)."""
    counts = [0] * 5
    for _ in range(cap // 2):
        counts[(rng.random() < score) * 2 + (rng.random() < score) * 2] += 1
        said = test.decide(test.llr(counts))
        if said is not None:
            return said
    return None


@pytest.mark.parametrize(
    ("truth", "wrong", "most"), [(0.0, "better", 0.075), (50.0, "not better", 0.075)]
)
def test_the_error_rates_hold_in_simulation(truth: float, wrong: str, most: float) -> None:
    test = Sprt(elo0=0, elo1=50, alpha=0.05, beta=0.05)
    rng = random.Random(f"sprt/{truth}")
    said = [_simulate(test, expected_score(truth), rng) for _ in range(1000)]
    assert None not in said
    # Nominally at most 5%; the normal approximation, which decides on a variance
    # measured as it goes, runs a little over (about 6% in 2000-test runs).
    assert said.count(wrong) / len(said) <= most


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MAMMAMIA, "arena", *args, "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_greedy_is_found_better_than_random_in_fewer_games_than_a_fixed_count() -> None:
    done = arena("random", "greedy", "--sprt", "--json", "--jobs", "2", "--seed", "4")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    assert data["decision"] == "better"
    assert data["llr"] >= data["bounds"][1]
    lower, upper = data["bounds"]
    assert all(lower < x < upper for x in data["llr_by_pair"][:-1])  # stopped at once
    assert data["games"] == 2 * data["pairs"] == 2 * sum(data["pentanomial"])
    assert data["games"] < data["fixed_games"]
    # The same seed in one process weighs the same pairs: the same decision, as soon.
    again = json.loads(
        arena("random", "greedy", "--sprt", "--json", "--jobs", "1", "--seed", "4").stdout
    )
    assert (again["decision"], again["games"], again["llr"]) == (
        data["decision"],
        data["games"],
        data["llr"],
    )


def test_a_bot_against_itself_is_not_better() -> None:
    done = arena("random", "random", "--sprt", "--elo1", "30")
    assert done.returncode == 0, done.stderr
    assert "random#2 is not better than random" in done.stdout
    assert "bounds (-2.944, 2.944)" in done.stdout
    data = json.loads(arena("random", "random", "--sprt", "--elo1", "30", "--json").stdout)
    assert data["decision"] == "not better" and data["llr"] <= data["bounds"][0]
    # Independent games, each its own deal, would need many more for the same errors.
    assert sum(data["trinomial"]) == data["games"] < data["fixed_games"]


def test_the_undecided_and_the_refused() -> None:
    result = run_sprt("greedy", "counter", Sprt(), cap=4, jobs=1)
    assert result.decision is None and result.games == 4
    assert "undecided at the game cap" in result.summary()
    three = arena("random", "greedy", "counter", "--sprt")
    assert three.returncode == 2 and "two SPECs" in three.stderr
    bad = arena("random", "greedy", "--sprt", "--alpha", "0.7")
    assert bad.returncode == 2 and "alpha 0.7" in bad.stderr
