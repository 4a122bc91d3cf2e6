"""Full random games per second of the rules engine, for 2 to 5 players, on one core,
beside the same figure of a plain reference engine measured in the same run.

Every seat chooses uniformly among the legal actions, so each decision pays for
enumerating them as well as for applying one. The reference (``reference_engine.py``)
is a straightforward dict-based implementation of the same rules; its rate is the
baseline the engine's is divided by (``engine_vs_reference``, the 4-player figure,
and ``engine_vs_reference_by_players``). The two are measured in alternating
blocks, and the ratio is the median over neighbouring pairs of blocks of their
games per CPU second, so that other work on the machine slows both alike.
``python -m bench.engine`` prints a table; ``run()`` returns the figures.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from mammamia import new_game

from . import reference_engine

PLAYERS = (2, 3, 4, 5)
HEADLINE_PLAYERS = 4  # the player count whose ratio is ``engine_vs_reference``
BLOCKS = 6  # alternating blocks of each engine per player count


def play(players: int, seed: int) -> int:
    """Plays one game with uniformly random decisions; returns how many it took."""
    state = new_game(players, seed=seed)
    choose = random.Random(seed).choice
    decisions = 0
    while state.to_act is not None:
        state.apply(choose(state.legal_actions()))
        decisions += 1
    return decisions


def search_like(players: int, seed: int, fan_out: int = 8) -> int:
    """Plays one random game the way a search bot walks a tree: at every decision the
    child of each of the first ``fan_out`` legal actions, then on with the child of a
    random one. Returns how many children it made."""
    state = new_game(players, seed=seed)
    choose = random.Random(seed).choice
    children = 0
    while state.to_act is not None:
        legal = state.legal_actions()
        for action in legal[:fan_out]:
            state.child(action)
        children += min(len(legal), fan_out) + 1
        state = state.child(choose(legal))
    return children


def measure_children(players: int, seconds: float, seed: int = 0) -> dict[str, float]:
    """Returns ``State.child`` calls per second (and per CPU second) of ``search_like``."""
    search_like(players, seed - 1)
    children = games = 0
    cpu = time.process_time()
    start = time.perf_counter()
    while True:
        children += search_like(players, seed + games)
        games += 1
        if time.perf_counter() - start >= seconds:
            break
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {
        "players": players,
        "games": games,
        "children": children,
        "children_per_second": round(children / elapsed),
        "children_per_cpu_second": round(children / cpu) if cpu > 0 else 0,
    }


def profile(players: int = HEADLINE_PLAYERS, games: int = 1000, top: int = 15) -> str:
    """Returns cProfile's busiest functions (by own time) over ``games`` random games
    and a tenth as many ``search_like`` games, which stress ``State.child``."""
    import cProfile
    import io
    import pstats

    for warm in range(200):
        play(players, -1 - warm)
    out = io.StringIO()
    for name, game, count in (
        ("random games (legal_actions + apply)", play, games),
        ("search-like games (State.child)", search_like, games // 10),
    ):
        profiler = cProfile.Profile()
        profiler.enable()
        for seed in range(count):
            game(players, seed)
        profiler.disable()
        out.write(f"== {name}, {count} games of {players} players\n")
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def _block(
    game: Callable[[int, int], int], players: int, seconds: float, seed: int
) -> tuple[int, int, float, float]:
    """Returns (games, decisions, elapsed seconds, CPU seconds) of ``game`` played for
    about ``seconds``."""
    games = decisions = 0
    cpu = time.process_time()
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        decisions += game(players, seed + games)
        games += 1
        now = time.perf_counter()
        if now >= deadline:
            break
    return games, decisions, now - start, time.process_time() - cpu


def _figures(games: int, decisions: int, elapsed: float, cpu: float) -> dict[str, float]:
    return {
        "games": games,
        "seconds": round(elapsed, 3),
        "games_per_second": round(games / elapsed, 1),
        "games_per_cpu_second": round(games / cpu, 1) if cpu > 0 else 0.0,
        "decisions_per_game": round(decisions / games, 1),
        "decisions_per_second": round(decisions / elapsed),
    }


def measure_both(
    players: int, seconds: float, seed: int = 0, blocks: int = BLOCKS
) -> tuple[dict[str, float], dict[str, float], list[float]]:
    """Returns the figures of the engine and of the reference over about ``seconds``
    each, played in ``blocks`` alternating blocks, and the ratio of their rates in each
    pair of neighbouring blocks.

    The ratios are of games per CPU second: on a machine shared with other work a
    process is descheduled for a varying share of each block, which its CPU time
    leaves out and wall-clock time does not.
    """
    for warm in range(20):  # fill the engine's caches of legal turns, as a long run would
        play(players, seed - 1 - warm)
    reference_engine.play_random_game(players, seed - 1)
    games_of = {"engine": play, "reference": reference_engine.play_random_game}
    runs: dict[str, list[tuple[int, int, float, float]]] = {"engine": [], "reference": []}
    for block in range(blocks):
        order = ("engine", "reference") if block % 2 == 0 else ("reference", "engine")
        for name in order:
            # Each block starts where the last one of its engine stopped: no game repeats.
            played = sum(r[0] for r in runs[name])
            runs[name].append(_block(games_of[name], players, seconds / blocks, seed + played))
    ratios = [
        (e[0] / e[3]) / (r[0] / r[3]) if e[3] > 0 and r[3] > 0 else 0.0
        for e, r in zip(runs["engine"], runs["reference"], strict=True)
    ]
    engine, reference = (
        [sum(column) for column in zip(*runs[n], strict=True)] for n in ("engine", "reference")
    )
    return (
        _figures(int(engine[0]), int(engine[1]), engine[2], engine[3]),
        _figures(int(reference[0]), int(reference[1]), reference[2], reference[3]),
        [round(x, 3) for x in ratios],
    )


def run(players: Sequence[int] = PLAYERS, seconds: float = 3.0, seed: int = 0) -> dict[str, Any]:
    """Returns the figures of each player count, keyed by the count as text: the engine's
    under ``players``, the reference's under ``reference``, and the ratio of their
    rates (the median over pairs of blocks) under ``engine_vs_reference_by_players``;
    ``engine_vs_reference`` is the 4-player ratio."""
    engine: dict[str, dict[str, float]] = {}
    reference: dict[str, dict[str, float]] = {}
    ratios: dict[str, float] = {}
    blocks: dict[str, list[float]] = {}
    for n in players:
        engine[str(n)], reference[str(n)], blocks[str(n)] = measure_both(n, seconds, seed)
        ratios[str(n)] = round(statistics.median(blocks[str(n)]), 2)
    return {
        "unit": "full random games, one process, one thread",
        "seconds_each": seconds,
        "players": engine,
        "reference": {"players": reference},
        "engine_vs_reference": ratios.get(str(HEADLINE_PLAYERS)),
        "engine_vs_reference_by_players": ratios,
        "engine_vs_reference_blocks": blocks,
        "child": measure_children(HEADLINE_PLAYERS, seconds / 2, seed),
        "load_average": [round(x, 2) for x in os.getloadavg()]
        if hasattr(os, "getloadavg")
        else None,
    }


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures of ``run`` as the lines of a text table."""
    lines = [
        f"{'players':>7}  {'games/s':>9}  {'decisions/s':>11}  {'decisions/game':>14}  "
        f"{'games':>6}  {'reference games/s':>17}  {'ratio':>5}"
    ]
    # games/s are by the wall clock; the ratio is of games per CPU second, see measure_both.
    reference = result["reference"]["players"]
    ratios = result["engine_vs_reference_by_players"]
    for n, row in result["players"].items():
        lines.append(
            f"{n:>7}  {row['games_per_second']:>9.1f}  "
            f"{row['decisions_per_second']:>11}  {row['decisions_per_game']:>14.1f}  "
            f"{row['games']:>6}  {reference[n]['games_per_second']:>17.1f}  "
            f"{ratios[n]:>5.2f}"
        )
    child = result["child"]
    lines.append(
        f"State.child, {child['players']} players, search-like: "
        f"{child['children_per_second']:,} children/s"
    )
    lines.append(
        f"engine_vs_reference ({HEADLINE_PLAYERS} players): "
        f"{result['engine_vs_reference']}  (median of "
        f"{result['engine_vs_reference_blocks'].get(str(HEADLINE_PLAYERS))}); "
        f"load average {result['load_average']}"
    )
    return lines


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark from the command line; returns its figures."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.engine",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="time per player count and engine"
    )
    parser.add_argument("--players", type=int, nargs="+", default=list(PLAYERS))
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print cProfile's busiest functions instead of the figures",
    )
    args = parser.parse_args(argv)
    if args.profile:
        print(profile(args.players[0] if len(args.players) == 1 else HEADLINE_PLAYERS))
        return {}
    result = run(args.players, args.seconds)
    print("\n".join(table(result)))
    return result


if __name__ == "__main__":
    main()
