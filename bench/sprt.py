"""How many games the sequential test needs, against a fixed-count test of the same
error rates.

For each pair of built-in bots (baseline A, candidate B), ``--runs`` sequential
tests (``client_sdk.arena.run_sprt``, seeds 0, 1, ...) with the default test
(elo0 0, elo1 50, alpha = beta = 0.05): how often each decision came, and the games
each took (median, quartiles, most). Beside it, the **fixed counts**: the games a
test that fixes its size in advance needs for the same error rates,
``((z_alpha + z_beta) sqrt(v) / (s1 - s0))^2`` samples (``Sprt.fixed_count``),
with ``v`` pooled over all the runs: for independent games (what ``mammamia arena
--games N`` plays, each game its own deal), the variance of a game's score; for
deal pairs, the pair score's (two games a sample).

``python -m bench.sprt`` prints the table (a progress line per run on stderr);
``--json FILE`` writes the figures. docs/bots.md has the results.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from client_sdk.arena import run_sprt
from client_sdk.logs import configure_quiet
from mammamia.sprt import PAIR_SCORES, Sprt, game_variance, variance

#: The pairs measured: (A, B, runs). The search bot is slow: fewer runs.
PAIRS: tuple[tuple[str, str, int], ...] = (
    ("random", "random", 20),
    ("random", "greedy", 20),
    ("greedy", "counter", 20),
    ("counter", "search@budget_ms=20", 3),
)


def _quartiles(values: Sequence[int]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "q1": None, "q3": None, "most": None}
    ordered = sorted(values)
    if len(ordered) == 1:
        q1 = q3 = float(ordered[0])
    else:
        q1, _, q3 = statistics.quantiles(ordered, n=4)
    return {
        "median": float(statistics.median(ordered)),
        "q1": q1,
        "q3": q3,
        "most": float(ordered[-1]),
    }


def run(
    pairs: Sequence[tuple[str, str, int]] = PAIRS,
    jobs: int = 2,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Returns, per pair of bots, the decisions and games of its sequential tests and
    the fixed count of the same error rates."""
    test = Sprt()
    rows = []
    for a, b, runs in pairs:
        decisions: dict[str, int] = {}
        games: list[int] = []
        pooled = [0] * PAIR_SCORES
        trinomial = [0, 0, 0]
        started = time.monotonic()
        for seed in range(runs):
            result = run_sprt(a, b, test, jobs=jobs, seed=seed, configure=configure_quiet)
            said = result.decision or "undecided"
            decisions[said] = decisions.get(said, 0) + 1
            games.append(result.games)
            pooled = [x + y for x, y in zip(pooled, result.pentanomial, strict=True)]
            trinomial = [x + y for x, y in zip(trinomial, result.trinomial, strict=True)]
            if progress is not None:
                progress(f"{b} against {a}, run {seed + 1}/{runs}: {said} after {result.games}")
        rows.append(
            {
                "a": a,
                "b": b,
                "runs": runs,
                "decisions": decisions,
                "games": _quartiles(games),
                "fixed_games": test.fixed_count(game_variance(trinomial)),
                "fixed_pair_games": 2 * test.fixed_count(variance(pooled)),
                "pentanomial": pooled,
                "trinomial": trinomial,
                "seconds": round(time.monotonic() - started, 1),
            }
        )
    return {
        "test": {"elo0": test.elo0, "elo1": test.elo1, "alpha": test.alpha, "beta": test.beta},
        "pairs": rows,
    }


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures as lines of text."""
    lines = []
    for row in result["pairs"]:
        g = row["games"]
        lines.append(
            f"{row['b']} against {row['a']}: {row['decisions']} in {row['runs']} runs; "
            f"games median {g['median']} ({g['q1']}-{g['q3']}, most {g['most']}); "
            f"fixed count {row['fixed_games']} games ({row['fixed_pair_games']} in deal pairs); "
            f"{row['seconds']} s"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the measurement and prints it; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m bench.sprt", description=__doc__)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--runs", type=int, help="runs per pair (default: 20, 3 for search)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    configure_quiet()
    pairs = PAIRS if args.runs is None else tuple((a, b, args.runs) for a, b, _ in PAIRS)
    result = run(pairs, args.jobs, lambda line: print(line, file=sys.stderr, flush=True))
    print("\n".join(table(result)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
