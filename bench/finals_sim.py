"""Finals simulation: how many matches the stopping rule needs to order a field.

In-process, no server: the finals' own functions (``server/competition/finals.py``:
``next_round``, ``rotations``, ``final_table``, ``stop``), the rules engine, and
the built-in bots played as ``play_local`` plays them. Each simulated finals seats
one finalist of every kind given (weakest first) and plays round after round, each
table a duplicate set on a fresh deal, to the budget; after every round it notes:

- whether the final table's order is the kinds' known order (``right``), and
- the first round after which ``finals.stop`` says to stop (with the budget given)
  and why (``settled`` or ``budget``), and whether the order was right then.

Two figures follow over ``--trials`` seeded finals:

- **the stopping rule**: matches played when it stopped (median, quartiles, most),
  how often it stopped ``settled`` rather than on the budget, and how often its
  order was right when it stopped;
- **a fixed schedule of the same confidence**: the fewest matches, at a round's
  end, after which the order is right in at least the rule's confidence (95%) of
  the finals and stays so at every later round played; what a competition
  without the rule would have to fix in advance, knowing the field.

``--equal KIND`` plays two finalists of one kind instead (each with its own random
stream: ``play_local`` seeds a bot's choices from the deal and the seat, so two
copies of a kind would otherwise play alike from a seat and every duplicate set
would split): no order is right, the rule should hit the budget, and the figures
say how often it stopped ``settled`` anyway (a false certainty) and when.

``python -m bench.finals_sim`` prints the figures (one progress line per finals on
stderr); ``--json FILE`` writes them. docs/competitions.md has the results.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Final

from bench.ladder_sim import factories, summarise
from client_sdk import Bot, FaultLog, play_local
from server.competition.finals import (
    CONFIDENCE,
    Played,
    Round,
    final_table,
    next_round,
    rotations,
    round_matches,
    stop,
)


@dataclass(frozen=True)
class Config:
    """One simulation: the finalists' kinds (weakest first; two equal finalists when
    ``equal``), the table sizes, the top M, the confidence and the budget."""

    kinds: tuple[str, ...] = ("random", "greedy", "counter")
    tables: tuple[int, ...] = (3,)
    top: int = 0  # 0: the whole order (the field's size - 1)
    confidence: float = CONFIDENCE
    budget: int = 150
    equal: bool = False


@dataclass(frozen=True)
class Trial:
    """One simulated finals: why and after how many matches the rule stopped, whether
    the order was right then, and whether it was right after each round (``None`` for
    equal finalists, who have no right order)."""

    index: int
    reason: str | None
    stopped: int | None
    right_at_stop: bool | None
    matches: list[int]
    right: list[bool] | None


class _OwnStream:
    """Mixed in before a bot's class: the ``rng`` a game gives the bot is reseeded
    with the bot's ``salt``, so two copies of a kind play apart from the same seat."""

    salt = ""
    _rng: random.Random

    @property
    def rng(self) -> random.Random:
        """Returns the bot's random generator."""
        return self._rng

    @rng.setter
    def rng(self, value: random.Random) -> None:
        self._rng = random.Random(f"{value.random()}/{self.salt}")


def _own_stream(maker: Callable[[], Bot], salt: str) -> Callable[[], Bot]:
    """Returns a factory of ``maker``'s bots whose random choices also depend on
    ``salt`` (:class:`_OwnStream`)."""

    def make() -> Bot:
        cls = type(maker())
        own = type(f"{cls.__name__}Own", (_OwnStream, cls), {"salt": salt})
        bot: Bot = own()
        bot.rng = random.Random(salt)
        return bot

    return make


def finalists(config: Config) -> dict[str, Callable[[], Bot]]:
    """Returns each finalist's name and bot factory, weakest first."""
    makers = factories_of(config)
    if config.equal:
        kind = config.kinds[0]
        return {f"{kind}-{c}": _own_stream(makers[kind], f"{kind}-{c}") for c in (1, 2)}
    return {kind: makers[kind] for kind in config.kinds}


def factories_of(config: Config) -> dict[str, Callable[[], Bot]]:
    """Returns a factory per kind of ``config`` (``bench.ladder_sim.factories``)."""
    from bench.ladder_sim import Config as LadderConfig

    return factories(LadderConfig(kinds=config.kinds[:1] if config.equal else config.kinds))


def run_finals(index: int, config: Config) -> Trial:
    """Returns the trial ``index`` of ``config``: a finals played round by round to
    the budget, each table a duplicate set on a fresh seeded deal."""
    makers = finalists(config)
    field = tuple(makers)
    top = config.top or len(field) - 1
    deals = random.Random(f"finals_sim/deals/{index}")
    per_round = round_matches(len(field), config.tables)
    played: list[Round] = []
    results: list[Played] = []
    matches: list[int] = []
    right: list[bool] = []
    reason: str | None = None
    stopped: int | None = None
    right_at_stop: bool | None = None
    while len(results) + per_round <= config.budget:
        r = next_round(field, config.tables, played, seed=f"finals_sim/{index}")
        played.append(r)
        for number, table in enumerate(r.tables):
            seed = deals.randrange(2**62)
            for seats in rotations(table):
                outcome = play_local(
                    [makers[n] for n in seats], seed=seed, faults=FaultLog(quiet=True)
                )
                results.append(Played(seats, outcome.ranks, set_id=f"{r.index}/{number}"))
        now = final_table(field, results)
        order = [line.name for line in now.lines]
        is_right = order == list(reversed(field))
        matches.append(now.matches)
        right.append(is_right)
        said = stop(now, top, config.confidence, config.budget, per_round)
        if said is not None and reason is None:
            reason, stopped, right_at_stop = said.reason, said.matches, is_right
    return Trial(
        index,
        reason,
        stopped,
        None if config.equal else right_at_stop,
        matches,
        None if config.equal else right,
    )


def fixed_schedule(trials: Sequence[Trial], confidence: float) -> int | None:
    """Returns the fewest matches after which the order is right in at least
    ``confidence`` of ``trials`` at that round and at every later round, or None."""
    if not trials or trials[0].right is None:
        return None
    rounds = min(len(t.matches) for t in trials)
    best: int | None = None
    for r in reversed(range(rounds)):
        share = sum(t.right[r] for t in trials if t.right is not None) / len(trials)
        if share < confidence:
            break
        best = trials[0].matches[r]
    return best


def _task(args: tuple[int, Config]) -> Trial:
    return run_finals(*args)


def run(
    config: Config,
    trials: int = 20,
    jobs: int = 1,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Returns the figures of ``trials`` simulated finals of ``config``."""
    progress = progress or (lambda line: None)
    started = time.perf_counter()
    done: list[Trial] = []
    pool = ProcessPoolExecutor(jobs) if jobs > 1 else None
    try:
        tasks = [(i, config) for i in range(trials)]
        for t in pool.map(_task, tasks) if pool else map(_task, tasks):
            done.append(t)
            verdict = {None: "", True: ", right", False: ", wrong"}[t.right_at_stop]
            progress(
                f"finals {len(done)}/{trials}: {t.reason or 'no stop'} after {t.stopped} "
                f"matches{verdict}  ({time.perf_counter() - started:.0f} s)"
            )
    finally:
        if pool:
            pool.shutdown()
    stops = [t for t in done if t.reason is not None]
    settled = [t for t in stops if t.reason == "settled"]
    return {
        "config": asdict(config),
        "trials": trials,
        "rule": summarise([t.stopped if t.reason == "settled" else None for t in done]),
        "stopped_settled": len(settled),
        "stopped_budget": sum(1 for t in stops if t.reason == "budget"),
        "right_at_stop": None
        if config.equal or not settled
        else sum(1 for t in settled if t.right_at_stop) / len(settled),
        "settled_matches": sorted(t.stopped for t in settled if t.stopped is not None),
        "fixed_schedule": fixed_schedule(done, config.confidence),
        "right_at_budget": None
        if config.equal
        else statistics.fmean(t.right[-1] for t in done if t.right),
        "trial_list": [asdict(t) | {"matches": None, "right": None} for t in done],
        "seconds": round(time.perf_counter() - started, 1),
    }


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures as text lines."""
    c = result["config"]
    field = (
        f"two {c['kinds'][0]} bots (equal)"
        if c["equal"]
        else f"{', '.join(c['kinds'])} (weakest first)"
    )
    rule = result["rule"]
    lines = [
        f"{result['trials']} finals of {field}; tables {c['tables']}; top "
        f"{c['top'] or 'all'}; confidence {c['confidence']}; budget {c['budget']} matches",
        f"stopping rule: settled in {result['stopped_settled']}, budget in "
        f"{result['stopped_budget']}; matches when settled: median {rule['median']}, "
        f"q1 {rule['q1']}, q3 {rule['q3']}, max {rule['max']}",
    ]
    if c["equal"]:
        lines.append(f"settled (falsely) after: {result['settled_matches']}")
    else:
        at_stop = result["right_at_stop"]
        lines.append(
            "order right when the rule settled: "
            + ("-" if at_stop is None else f"{at_stop:.0%}")
            + f"; right at the budget: {result['right_at_budget']:.0%}"
        )
        fixed = result["fixed_schedule"]
        lines.append(
            f"fixed schedule right in {c['confidence']:.0%} of finals from then on: "
            + (f"{fixed} matches" if fixed else f"more than {c['budget']} matches")
        )
    lines.append(f"{result['seconds']} s")
    return lines


DEFAULT_KINDS: Final = "random,greedy,counter"


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the simulation, prints its figures (progress on stderr); returns 0."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.finals_sim",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--kinds", default=DEFAULT_KINDS, help=f"finalists, weakest first ({DEFAULT_KINDS})"
    )
    parser.add_argument("--equal", metavar="KIND", help="two finalists of KIND instead of --kinds")
    parser.add_argument(
        "--tables", default="", help="table sizes, e.g. 2 or 2,3 (default: the whole field)"
    )
    parser.add_argument("--top", type=int, default=0, help="the top M to order (default all)")
    parser.add_argument("--confidence", type=float, default=CONFIDENCE)
    parser.add_argument("--budget", type=int, default=150, help="matches (default 150)")
    parser.add_argument("--trials", type=int, default=20, help="finals simulated (default 20)")
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    args = parser.parse_args(argv)
    kinds = (args.equal,) if args.equal else tuple(args.kinds.split(","))
    size = 2 if args.equal else len(kinds)
    tables = tuple(int(t) for t in args.tables.split(",")) if args.tables else (size,)
    config = Config(kinds, tables, args.top, args.confidence, args.budget, bool(args.equal))
    result = run(
        config, args.trials, args.jobs, lambda line: print(line, file=sys.stderr, flush=True)
    )
    print("\n".join(table(result)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
