"""Ladder simulation: how many matches a ladder needs before its order is right.

In-process, no server: the scheduler's own choices (``form_matches`` with a
``Policy``), the rules engine, the built-in bots played as ``play_local`` plays
them, and the ladder's rating code (``ratings.rate``). Each simulated ladder holds
``copies`` bots of every kind (by default two each of random, greedy and counter,
the population of ``mammamia demo``) and plays round after round: the scheduler
forms matches among all the bots (at most ``concurrency`` at once), each is
played and rated in turn, and after every rating update the standings are
checked.

**The order is right with 95% confidence** when, in the standings (conservative
rating ``mu - 3 sigma``, best first, as ``ladder standings`` lists them):

1. every counter is above every greedy, and every greedy above every random
   (the kinds' known order, weakest first; with ``--search`` every search bot
   above every counter; copies of one kind may stand in any order among
   themselves), and
2. for each pair of neighbours of different kinds, the rating model's
   probability that the higher is really better (``confidence.p_better``) is at
   least 0.95.

A ladder's **matches needed** is the number of matches played when this first
holds (the first look at which the standings show the right order and are sure
of it). With ``--settle`` every ladder plays to ``--max-matches`` and its
**settled** figure is the number after which the condition held at every later
look. A ladder that never meets it within ``--max-matches`` counts as not
reached: medians and quartiles treat it as infinitely long.

Three ways to seat and rate, each played over the same deals (deal *k* is the
*k*-th match or set the ladder forms):

- ``plain``: every match a fresh deal, the seats as the scheduler drew them;
- ``set-match``: every deal played as a **duplicate set**, once for every rotation
  of the seats (N matches for N players, the same bots, each bot playing each
  seat's cards once, the first player the deal's), each match rated as it ends;
- ``set-combined``: the same sets, each rated once when it ends, as one match
  whose ranks are the bots' summed ranks over the set (equal sums tie).

A game's result depends only on its deal and on which kind of bot sits where (the
bots' own random choices are seeded by the deal and the seat, as ``play_local``
does), so results are cached within a ladder's three runs.

``--luck DEALS`` measures why duplicate sets help as much as they do: over the same
deals, the variance of a 2-player result per plain match and per set (:func:`luck`).

``python -m bench.ladder_sim`` prints the table (one progress line per ladder on
stderr); ``--json FILE`` writes the figures. docs/ratings.md has the results.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import itertools
import json
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from bots.counter import CounterBot
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from client_sdk import Bot, FaultLog, play_local
from server.ladder.confidence import p_better
from server.ladder.ratings import Rating, initial, rate
from server.ladder.scheduler import Policy, Waiting, form_matches

MODES: Final = ("plain", "set-match", "set-combined")
LADDERS: Final = {"2": (2, 2), "2-5": (2, 5)}
THRESHOLD: Final = 0.95

#: The built-in bots, weakest first: the order the standings should find.
KINDS: Final[dict[str, Callable[[], Bot]]] = {
    "random": RandomBot,
    "greedy": GreedyBot,
    "counter": CounterBot,
}


@dataclass(frozen=True)
class Config:
    """What one simulated ladder plays: bot kinds (weakest first), copies of each,
    the policy's players and concurrency, when to stop, and how sure to be."""

    kinds: tuple[str, ...] = tuple(KINDS)
    copies: int = 2
    players: tuple[int, int] = (2, 2)
    concurrency: int = 4
    max_matches: int = 600
    threshold: float = THRESHOLD
    settle: bool = False
    search_args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """One ladder run: matches (and sets) played when the order was first right and
    sure (None: not within the cap), and when it settled (with ``settle``)."""

    mode: str
    index: int
    first: int | None
    sets: int | None
    settled: int | None
    played: int


def factories(config: Config) -> dict[str, Callable[[], Bot]]:
    """Returns a bot factory per kind of ``config``; raises ValueError for an unknown
    kind (``search`` is loaded from ``bots.search`` with ``config.search_args``)."""
    out: dict[str, Callable[[], Bot]] = {}
    for kind in config.kinds:
        if kind in KINDS:
            out[kind] = KINDS[kind]
        elif kind == "search":
            cls = importlib.import_module("bots.search").SearchBot
            out[kind] = functools.partial(cls, **config.search_args)
        else:
            raise ValueError(f"bot kind {kind!r}: expected one of {', '.join(KINDS)} or search")
    return out


class Games:
    """Plays games in-process and remembers their ranks by deal and seated kinds."""

    def __init__(self, makers: dict[str, Callable[[], Bot]]) -> None:
        self.makers = makers
        self.cache: dict[tuple[int, tuple[str, ...]], tuple[int, ...]] = {}
        self.played = 0

    def ranks(self, seed: int, kinds: tuple[str, ...]) -> tuple[int, ...]:
        """Returns each seat's rank (1 best, R-END-2) of the deal ``seed`` with a bot
        of ``kinds[i]`` at seat ``i``."""
        key = (seed, kinds)
        if key not in self.cache:
            result = play_local(
                [self.makers[k] for k in kinds], seed=seed, faults=FaultLog(quiet=True)
            )
            self.cache[key] = result.ranks
            self.played += 1
        return self.cache[key]


def order_is_right(
    ratings: dict[str, Rating], kind_of: dict[str, str], kinds: Sequence[str], threshold: float
) -> bool:
    """Returns whether the standings of ``ratings`` put the kinds in their order
    (``kinds`` weakest first) with every boundary between kinds at least
    ``threshold`` sure (``p_better``), as the module's docstring defines."""
    strength = {kind: i for i, kind in enumerate(kinds)}
    board = sorted(ratings, key=lambda n: (-ratings[n].conservative, n))
    for upper, lower in itertools.pairwise(board):
        gap = strength[kind_of[upper]] - strength[kind_of[lower]]
        if gap < 0:
            return False
        if gap > 0 and p_better(ratings[upper], ratings[lower]) < threshold:
            return False
    return True


def set_ranks(results: Sequence[Sequence[int]]) -> list[int]:
    """Returns a set's combined ranks (1 best, equal sums tie) from its matches' ranks,
    each listed by bot in the same order."""
    sums = [sum(column) for column in zip(*results, strict=True)]
    return [1 + sum(1 for other in sums if other < mine) for mine in sums]


def run_ladder(mode: str, index: int, config: Config, games: Games) -> Outcome:
    """Returns the outcome of ladder ``index`` played in ``mode`` (one of
    :data:`MODES`); raises ValueError for an unknown mode."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    names = [f"{kind}-{c + 1}" for kind in config.kinds for c in range(config.copies)]
    kind_of = {n: n.rsplit("-", 1)[0] for n in names}
    ratings = {n: initial() for n in names}
    played = dict.fromkeys(names, 0)
    policy = Policy(*config.players, concurrency=config.concurrency)
    # The same schedule seed and deal stream in every mode: the modes differ only in
    # how each deal is seated and rated.
    schedule = random.Random(f"ladder_sim/schedule/{config.players}/{index}")
    deals = random.Random(f"ladder_sim/deals/{config.players}/{index}")
    matches = sets = 0
    first: int | None = None
    first_sets: int | None = None
    last_wrong = 0

    def look() -> bool:
        nonlocal first, first_sets, last_wrong
        if order_is_right(ratings, kind_of, config.kinds, config.threshold):
            if first is None:
                first, first_sets = matches, sets
            return True
        last_wrong = matches
        return False

    def rated(seated: Sequence[str], ranks: Sequence[int]) -> None:
        after = rate([ratings[n] for n in seated], ranks)
        for n, r in zip(seated, after, strict=True):
            ratings[n] = r

    while matches < config.max_matches and (config.settle or first is None):
        waiting = [Waiting(n, ratings[n].mu, played[n]) for n in names]
        for seated in form_matches(waiting, policy, 0, schedule):
            seed = deals.randrange(2**62)
            rotations = (
                [seated]
                if mode == "plain"
                else [seated[r:] + seated[:r] for r in range(len(seated))]
            )
            results = []
            for seats in rotations:
                ranks = games.ranks(seed, tuple(kind_of[n] for n in seats))
                matches += 1
                for n in seats:
                    played[n] += 1
                by_bot = dict(zip(seats, ranks, strict=True))
                results.append([by_bot[n] for n in seated])
                if mode != "set-combined":
                    rated(seats, ranks)
                    look()
            sets += 1
            if mode == "set-combined":
                rated(seated, set_ranks(results))
                look()
            if matches >= config.max_matches or (first is not None and not config.settle):
                break
    settled = last_wrong if config.settle and last_wrong < matches else None
    return Outcome(mode, index, first, first_sets if mode != "plain" else None, settled, matches)


def luck(weak: str, strong: str, deals: int, games: Games) -> dict[str, Any]:
    """Returns how much of a 2-player result between two kinds is the deal's: the
    stronger's mean score (win 1, tie 0.5, loss 0) and its variance per plain match
    and per duplicate set (the mean of its two rotations), and ``matches_ratio``,
    the matches a set-based test needs for the same precision as a test on plain
    matches (``2 * var_set / var_plain``)."""
    plain, sets = [], []
    deal_rng = random.Random(f"ladder_sim/luck/{weak}/{strong}")
    for d in range(deals):
        seed = deal_rng.randrange(2**62)
        scores = []
        for seats in ((weak, strong), (strong, weak)):
            ranks = games.ranks(seed, seats)
            mine, theirs = ranks[seats.index(strong)], ranks[1 - seats.index(strong)]
            scores.append(1.0 if mine < theirs else 0.5 if mine == theirs else 0.0)
        plain.append(scores[d % 2])  # plain seating: one match, either seat
        sets.append(statistics.fmean(scores))
    var_plain, var_set = statistics.pvariance(plain), statistics.pvariance(sets)
    return {
        "weak": weak,
        "strong": strong,
        "deals": deals,
        "score_plain": round(statistics.fmean(plain), 3),
        "score_sets": round(statistics.fmean(sets), 3),
        "var_plain": round(var_plain, 4),
        "var_set": round(var_set, 4),
        "split_sets": sum(1 for x in sets if x == 0.5) / deals,
        "matches_ratio": round(2 * var_set / var_plain, 2) if var_plain else None,
    }


def _ladder_task(args: tuple[int, Config]) -> list[Outcome]:
    """Returns the outcomes of one ladder index in every mode (one process's work)."""
    index, config = args
    games = Games(factories(config))
    return [run_ladder(mode, index, config, games) for mode in MODES]


def paired_fewer(outcomes: Sequence[Outcome]) -> dict[str, int]:
    """Returns, per duplicate mode, in how many ladders it needed fewer matches than
    plain seating over the same deals (not reached counts as longest)."""
    first = {(o.index, o.mode): math.inf if o.first is None else o.first for o in outcomes}
    indices = {o.index for o in outcomes}
    return {
        mode: sum(1 for i in indices if first[i, mode] < first[i, "plain"]) for mode in MODES[1:]
    }


def _quantile(values: Sequence[float], q: float) -> float:
    """Returns the ``q`` quantile of ``values`` (inf counts as longest), or nan if empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    if ordered[hi] == math.inf:
        return math.inf if pos > lo or ordered[lo] == math.inf else ordered[lo]
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarise(values: Sequence[int | None]) -> dict[str, Any]:
    """Returns median, quartiles, min, max and the count not reached, of matches
    needed (None: not reached within the cap)."""
    xs = [math.inf if v is None else float(v) for v in values]
    reached = [v for v in values if v is not None]

    def fig(x: float) -> float | None:
        return None if math.isnan(x) or math.isinf(x) else round(x, 1)

    return {
        "ladders": len(values),
        "not_reached": len(values) - len(reached),
        "median": fig(_quantile(xs, 0.5)),
        "q1": fig(_quantile(xs, 0.25)),
        "q3": fig(_quantile(xs, 0.75)),
        "min": min(reached, default=None),
        "max": max(reached, default=None),
        "mean_reached": round(statistics.fmean(reached), 1) if reached else None,
    }


def run(
    ladders: int = 10,
    kinds: Sequence[str] = tuple(KINDS),
    copies: int = 2,
    which: Sequence[str] = tuple(LADDERS),
    max_matches: int = 600,
    threshold: float = THRESHOLD,
    concurrency: int = 4,
    settle: bool = False,
    jobs: int = 1,
    search_args: dict[str, Any] | None = None,
    luck_deals: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Returns the figures: per ladder kind (``"2"``, ``"2-5"``) and mode, the matches
    needed over ``ladders`` seeded ladders, each ladder's outcome, and the ratios of
    the duplicate modes' medians to plain's; with ``luck_deals``, :func:`luck` of each
    pair of neighbouring kinds over that many deals."""
    progress = progress or (lambda line: None)
    started = time.perf_counter()
    out: dict[str, Any] = {
        "ladders": ladders,
        "kinds": list(kinds),
        "copies": copies,
        "max_matches": max_matches,
        "threshold": threshold,
        "concurrency": concurrency,
        "settle": settle,
        "load_average_before": _load(),
        "kinds_of_ladder": {},
    }
    for key in which if ladders > 0 else ():
        config = Config(
            tuple(kinds),
            copies,
            LADDERS[key],
            concurrency,
            max_matches,
            threshold,
            settle,
            dict(search_args or {}),
        )
        tasks = [(i, config) for i in range(ladders)]
        outcomes: list[Outcome] = []
        played = 0
        t0 = time.perf_counter()
        pool = ProcessPoolExecutor(jobs) if jobs > 1 else None
        try:
            results = pool.map(_ladder_task, tasks) if pool else map(_ladder_task, tasks)
            for done, batch in enumerate(results, 1):
                outcomes += batch
                played += max(o.played for o in batch)
                progress(
                    f"{key} players, ladder {done}/{ladders}: "
                    + ", ".join(
                        f"{o.mode} {o.first if o.first is not None else '>' + str(max_matches)}"
                        for o in batch
                    )
                    + f"  ({time.perf_counter() - t0:.0f} s)"
                )
        finally:
            if pool:
                pool.shutdown()
        modes: dict[str, dict[str, Any]] = {}
        for mode in MODES:
            mine = [o for o in outcomes if o.mode == mode]
            modes[mode] = {"first": summarise([o.first for o in mine])}
            if mode != "plain":
                modes[mode]["sets_first"] = summarise([o.sets for o in mine])
            if settle:
                modes[mode]["settled"] = summarise([o.settled for o in mine])
        fewer = paired_fewer(outcomes)
        for mode in MODES[1:]:
            modes[mode]["ladders_fewer_than_plain"] = fewer[mode]
        ratios = _ratios(modes, "first")
        out["kinds_of_ladder"][key] = {
            "players": list(LADDERS[key]),
            "modes": modes,
            "median_ratio_to_plain": ratios,
            "settled_median_ratio_to_plain": _ratios(modes, "settled") if settle else {},
            "outcomes": [asdict(o) for o in outcomes],
            "seconds": round(time.perf_counter() - t0, 1),
        }
    if luck_deals:
        games = Games(factories(Config(tuple(kinds), search_args=dict(search_args or {}))))
        out["luck"] = [
            luck(weak, strong, luck_deals, games) for weak, strong in itertools.pairwise(kinds)
        ]
        progress(f"luck over {luck_deals} deals: done")
    out["seconds"] = round(time.perf_counter() - started, 1)
    out["load_average_after"] = _load()
    return out


def _ratios(modes: dict[str, dict[str, Any]], what: str) -> dict[str, float | None]:
    """Returns each duplicate mode's median ``what`` over plain's (None: either unknown)."""
    plain = modes["plain"][what]["median"]
    return {
        mode: round(modes[mode][what]["median"] / plain, 2)
        if plain and modes[mode][what]["median"]
        else None
        for mode in MODES[1:]
    }


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures as text lines: one row per ladder kind and mode."""
    lines = [
        f"{result['ladders']} ladders each; bots: {result['copies']} x "
        f"{', '.join(result['kinds'])}; order right at p_better >= {result['threshold']}"
        f"; cap {result['max_matches']} matches; 'fewer': ladders in which the mode "
        "needed fewer matches than plain",
        f"{'players':8} {'mode':22} {'median':>7} {'q1':>7} {'q3':>7} {'min':>5} "
        f"{'max':>5} {'not reached':>11} {'vs plain':>8} {'fewer':>5}",
    ]

    def cell(x: Any) -> str:
        return "-" if x is None else f"{x:g}"

    for key, kind in result["kinds_of_ladder"].items():
        for mode, figs in kind["modes"].items():
            for what in ("first", "settled"):
                if what not in figs:
                    continue
                f = figs[what]
                ratio = kind[
                    "median_ratio_to_plain" if what == "first" else "settled_median_ratio_to_plain"
                ].get(mode)
                label = mode if what == "first" else f"{mode} (settled)"
                fewer = figs.get("ladders_fewer_than_plain")
                lines.append(
                    f"{key:8} {label:22} {cell(f['median']):>7} {cell(f['q1']):>7} "
                    f"{cell(f['q3']):>7} {cell(f['min']):>5} {cell(f['max']):>5} "
                    f"{f['not_reached']:>11} {cell(ratio):>8} "
                    f"{cell(fewer if what == 'first' else None):>5}".rstrip()
                )
    for row in result.get("luck", []):
        lines.append(
            f"luck {row['weak']} vs {row['strong']} (2 players, {row['deals']} deals): "
            f"score {row['score_plain']:g}, variance per match {row['var_plain']:g}, "
            f"per set {row['var_set']:g}, sets split {row['split_sets']:.0%}; "
            f"a test on sets needs {cell(row['matches_ratio'])} x the matches"
        )
    lines.append(
        f"load average before {result['load_average_before']}, after "
        f"{result['load_average_after']}; {result['seconds']} s"
    )
    return lines


def _search_args(text: str) -> dict[str, Any]:
    """Returns ``k=v,...`` as keyword arguments (numbers as numbers)."""
    args: dict[str, Any] = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        try:
            args[key] = int(value)
        except ValueError:
            try:
                args[key] = float(value)
            except ValueError:
                args[key] = value
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the simulation, prints its table (progress on stderr); returns 0."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.ladder_sim",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--ladders",
        type=int,
        default=10,
        help="independent seeded ladders per ladder kind (default 10; 0: none)",
    )
    parser.add_argument(
        "--players",
        nargs="+",
        choices=sorted(LADDERS),
        default=list(LADDERS),
        help="ladder kinds: 2-player, mixed 2-5 (default both)",
    )
    parser.add_argument("--copies", type=int, default=2, help="bots of each kind (default 2)")
    parser.add_argument(
        "--max-matches",
        type=int,
        default=600,
        help="matches after which a ladder counts as not reached (default 600)",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=THRESHOLD,
        help="p_better every boundary between kinds needs (default 0.95)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=4,
        help="matches the scheduler forms at once (the server's default 4)",
    )
    parser.add_argument(
        "--settle",
        action="store_true",
        help="play every ladder to --max-matches and report when it settled",
    )
    parser.add_argument(
        "--search", action="store_true", help="add bots.search.SearchBot as the strongest kind"
    )
    parser.add_argument(
        "--search-args",
        default="",
        metavar="K=V,...",
        help="keyword arguments of SearchBot, e.g. a small budget",
    )
    parser.add_argument(
        "--luck",
        type=int,
        default=0,
        metavar="DEALS",
        help="also measure how much of a 2-player result is the deal's, "
        "over DEALS deals per pair of neighbouring kinds",
    )
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    args = parser.parse_args(argv)

    kinds = (*KINDS, "search") if args.search else tuple(KINDS)
    result = run(
        args.ladders,
        kinds,
        args.copies,
        args.players,
        args.max_matches,
        args.threshold,
        args.concurrency,
        args.settle,
        args.jobs,
        _search_args(args.search_args),
        args.luck,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    print("\n".join(table(result)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
