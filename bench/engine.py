"""Full random games per second of the rules engine, for 2 to 5 players, on one core,
beside the same figure of a plain reference engine measured in the same run.

Every seat chooses uniformly among the legal actions, so each decision pays for
enumerating them as well as for applying one. The reference (``reference_engine.py``)
is a straightforward dict-based implementation of the same rules; its rate is the
baseline the engine's is divided by (``engine_vs_reference``, the 4-player figure,
and ``engine_vs_reference_by_players``). The two are measured in alternating
blocks, so that other work on the machine slows both alike.
``python -m bench.engine`` prints a table; ``run()`` returns the figures.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from mammamia import new_game

from . import reference_engine

PLAYERS = (2, 3, 4, 5)
HEADLINE_PLAYERS = 4          # the player count whose ratio is ``engine_vs_reference``
BLOCKS = 3                    # alternating blocks of each engine per player count


def play(players: int, seed: int) -> int:
    """Plays one game with uniformly random decisions; returns how many it took."""
    state = new_game(players, seed=seed)
    choose = random.Random(seed).choice
    decisions = 0
    while state.to_act is not None:
        state.apply(choose(state.legal_actions()))
        decisions += 1
    return decisions


def _block(game: Callable[[int, int], int], players: int, seconds: float,
           seed: int) -> tuple[int, int, float]:
    """Returns (games, decisions, elapsed seconds) of ``game`` played for about ``seconds``."""
    games = decisions = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        decisions += game(players, seed + games)
        games += 1
        now = time.perf_counter()
        if now >= deadline:
            break
    return games, decisions, now - start


def _figures(games: int, decisions: int, elapsed: float) -> dict[str, float]:
    return {"games": games, "seconds": round(elapsed, 3),
            "games_per_second": round(games / elapsed, 1),
            "decisions_per_game": round(decisions / games, 1),
            "decisions_per_second": round(decisions / elapsed)}


def measure_both(players: int, seconds: float, seed: int = 0,
                 blocks: int = BLOCKS) -> tuple[dict[str, float], dict[str, float]]:
    """Returns the figures of (the engine, the reference) over about ``seconds`` each,
    played in ``blocks`` alternating blocks."""
    for warm in range(20):   # fill the engine's per-hand caches, as a long run would
        play(players, seed - 1 - warm)
    reference_engine.play_random_game(players, seed - 1)
    totals = {"engine": [0, 0, 0.0], "reference": [0, 0, 0.0]}
    games_of = {"engine": play, "reference": reference_engine.play_random_game}
    for block in range(blocks):
        # Each block starts where the last one of its engine stopped, so no game repeats.
        order = ("engine", "reference") if block % 2 == 0 else ("reference", "engine")
        for name in order:
            total = totals[name]
            games, decisions, elapsed = _block(games_of[name], players, seconds / blocks,
                                               seed + int(total[0]))
            total[0] += games
            total[1] += decisions
            total[2] += elapsed
    engine, reference = (totals[n] for n in ("engine", "reference"))
    return (_figures(int(engine[0]), int(engine[1]), engine[2]),
            _figures(int(reference[0]), int(reference[1]), reference[2]))


def run(players: Sequence[int] = PLAYERS, seconds: float = 3.0, seed: int = 0) -> dict[str, Any]:
    """Returns the figures of each player count, keyed by the count as text: the engine's
    under ``players``, the reference's under ``reference``, and their ratios."""
    engine: dict[str, dict[str, float]] = {}
    reference: dict[str, dict[str, float]] = {}
    for n in players:
        engine[str(n)], reference[str(n)] = measure_both(n, seconds, seed)
    ratios = {n: round(engine[n]["games_per_second"] / reference[n]["games_per_second"], 2)
              for n in engine}
    return {"unit": "full random games, one process, one thread", "seconds_each": seconds,
            "players": engine, "reference": {"players": reference},
            "engine_vs_reference": ratios.get(str(HEADLINE_PLAYERS)),
            "engine_vs_reference_by_players": ratios}


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures of ``run`` as the lines of a text table."""
    lines = [f"{'players':>7}  {'games/s':>9}  {'decisions/s':>11}  {'decisions/game':>14}  "
             f"{'games':>6}  {'reference games/s':>17}  {'ratio':>5}"]
    reference = result["reference"]["players"]
    ratios = result["engine_vs_reference_by_players"]
    for n, row in result["players"].items():
        lines.append(f"{n:>7}  {row['games_per_second']:>9.1f}  "
                     f"{row['decisions_per_second']:>11}  {row['decisions_per_game']:>14.1f}  "
                     f"{row['games']:>6}  {reference[n]['games_per_second']:>17.1f}  "
                     f"{ratios[n]:>5.2f}")
    lines.append(f"engine_vs_reference ({HEADLINE_PLAYERS} players): "
                 f"{result['engine_vs_reference']}")
    return lines


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark from the command line; returns its figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.engine", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="time per player count and engine")
    parser.add_argument("--players", type=int, nargs="+", default=list(PLAYERS))
    args = parser.parse_args(argv)
    result = run(args.players, args.seconds)
    print("\n".join(table(result)))
    return result


if __name__ == "__main__":
    main()
