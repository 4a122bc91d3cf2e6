"""The ``search`` bot's decisions against the clock: time taken and rollouts run.

``python -m bench.search [--budget-ms MS ...] [--games N] [--players P]`` plays games
in this process between one ``search`` bot (its seat rotating from game to game)
and ``counter`` bots, timing every decision the search bot takes. For each budget
it reports the decision time (p50, p99, the longest, the share within the
budget plus 10%, the bot's promise, and how many took longer than twice the
budget: late against a deadline of twice the budget), the rollouts per decision (p50) and the
rollouts per second of search time. Other work on the machine slows every figure:
the load average is reported with them.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

from bots.counter import CounterBot
from bots.search import SearchBot
from client_sdk.logs import configure_quiet
from mammamia import RESOLVE, new_game, view_of

from .latency import percentile

BUDGETS = (20.0, 50.0, 200.0)


def measure(budget_ms: float, games: int, players: int, seed: int = 0) -> dict[str, Any]:
    """Returns the figures of ``games`` games at one budget (see the module docstring)."""
    times: list[float] = []
    rollouts: list[int] = []
    clock = time.perf_counter
    for g in range(games):
        state = new_game(players, seed=seed + g)
        searcher = g % players
        bots: list[SearchBot | CounterBot] = [CounterBot() for _ in range(players)]
        bots[searcher] = SearchBot(budget_ms=budget_ms)
        for i, each in enumerate(bots):
            each.rng = random.Random(f"{seed + g}/{i}")
        while not state.is_over:
            seat = state.to_act
            assert seat is not None
            view = view_of(state, seat)
            bot = bots[seat]
            started = clock()
            action = bot.resolve(view) if state.phase == RESOLVE else bot.turn(view)
            if seat == searcher and len(view.legal) > 1:
                times.append((clock() - started) * 1000)
                assert isinstance(bot, SearchBot)
                rollouts.append(bot.last_iterations)
            state.apply(action)
    searched = sum(times) / 1000
    times.sort()
    promise = budget_ms * 1.1
    return {
        "budget_ms": budget_ms,
        "players": players,
        "games": games,
        "decisions": len(times),
        "ms_p50": round(percentile(times, 50), 1),
        "ms_p99": round(percentile(times, 99), 1),
        "ms_max": round(times[-1], 1),
        "within_budget_plus_10pct": round(sum(t <= promise for t in times) / len(times), 4),
        "over_twice_budget": sum(t > 2 * budget_ms for t in times),
        "rollouts_per_decision_p50": statistics.median(rollouts),
        "rollouts": sum(rollouts),
        "rollouts_per_second": round(sum(rollouts) / searched, 1) if searched else 0.0,
    }


def run(
    budgets: Sequence[float] = BUDGETS, games: int = 6, players: int = 2, seed: int = 0
) -> dict[str, Any]:
    """Returns the figures for every budget, with the machine's load average."""
    rows = [measure(b, games, players, seed) for b in budgets]
    return {
        "rows": rows,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures as a Markdown table."""
    lines = [
        "| budget (ms) | players | decisions | p50 (ms) | p99 (ms) | longest (ms) "
        "| within budget + 10% | over twice the budget | rollouts a decision (p50) "
        "| rollouts/s |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['budget_ms']:g} | {r['players']} | {r['decisions']} "
            f"| {r['ms_p50']} | {r['ms_p99']} | {r['ms_max']} "
            f"| {r['within_budget_plus_10pct']:.2%} | {r['over_twice_budget']} "
            f"| {r['rollouts_per_decision_p50']:g} | {r['rollouts_per_second']} |"
        )
    lines.append(f"load average {result['load_average']}, {result['cpus']} CPUs")
    return lines


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark from the command line, prints its table, returns its figures."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.search",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--budget-ms",
        type=float,
        nargs="+",
        default=list(BUDGETS),
        metavar="MS",
        help="budgets per decision (default: 20 50 200)",
    )
    parser.add_argument("--games", type=int, default=6, help="games per budget (default 6)")
    parser.add_argument("--players", type=int, default=2, help="players a game (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="first game's seed (default 0)")
    args = parser.parse_args(argv)
    configure_quiet()  # each decision's debug line would bury the table
    result = run(args.budget_ms, args.games, args.players, args.seed)
    print("\n".join(table(result)))
    return result


if __name__ == "__main__":
    main()
