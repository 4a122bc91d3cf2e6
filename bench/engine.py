"""Full random games per second of the rules engine, for 2 to 5 players, on one core.

Every seat chooses uniformly among the legal actions, so each decision pays for
enumerating them as well as for applying one. ``python -m bench.engine`` prints a
table; ``run()`` returns the figures.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence
from typing import Any

from mammamia import new_game

PLAYERS = (2, 3, 4, 5)


def play(players: int, seed: int) -> int:
    """Plays one game with uniformly random decisions; returns how many it took."""
    state = new_game(players, seed=seed)
    choose = random.Random(seed).choice
    decisions = 0
    while state.to_act is not None:
        state.apply(choose(state.legal_actions()))
        decisions += 1
    return decisions


def measure(players: int, seconds: float, seed: int = 0) -> dict[str, float]:
    """Returns games and decisions per second over about ``seconds`` of play."""
    for warm in range(20):   # fill the engine's per-hand caches, as a long run would
        play(players, seed - 1 - warm)
    games = decisions = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        decisions += play(players, seed + games)
        games += 1
        now = time.perf_counter()
        if now >= deadline:
            break
    elapsed = now - start
    return {"games": games, "seconds": round(elapsed, 3),
            "games_per_second": round(games / elapsed, 1),
            "decisions_per_game": round(decisions / games, 1),
            "decisions_per_second": round(decisions / elapsed)}


def run(players: Sequence[int] = PLAYERS, seconds: float = 3.0, seed: int = 0) -> dict[str, Any]:
    """Returns the figures of each player count, keyed by the count as text."""
    return {"unit": "full random games, one process, one thread", "seconds_each": seconds,
            "players": {str(n): measure(n, seconds, seed) for n in players}}


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures of ``run`` as the lines of a text table."""
    lines = [f"{'players':>7}  {'games/s':>9}  {'decisions/s':>11}  {'decisions/game':>14}  "
             f"{'games':>6}"]
    for n, row in result["players"].items():
        lines.append(f"{n:>7}  {row['games_per_second']:>9.1f}  "
                     f"{row['decisions_per_second']:>11}  {row['decisions_per_game']:>14.1f}  "
                     f"{row['games']:>6}")
    return lines


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark from the command line; returns its figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.engine", description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="time per player count")
    parser.add_argument("--players", type=int, nargs="+", default=list(PLAYERS))
    args = parser.parse_args(argv)
    result = run(args.players, args.seconds)
    print("\n".join(table(result)))
    return result


if __name__ == "__main__":
    main()
