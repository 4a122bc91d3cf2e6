"""A flat Monte Carlo bot with sequential halving: the baseline the ``search`` bot is
measured against (docs/search.md).

It is what a bot author writes first on the SDK and the rules package: for each
decision, every legal option is a candidate; each candidate is played out to the
end of the game, from sampled deals (``mammamia.determinize``: a fresh deal of the
hidden cards every fourth playout, variants of it in between, as ``search`` does),
by every seat choosing uniformly at random, and scored by its share of the win.
Sequential halving spreads the playouts: the time (or ``iterations``) is cut into
as many phases as it takes to halve the candidates down to one, every candidate
still in is played out on the same deals in a phase, and the worse half leaves.

    mammamia arena bench/flat_mc.py:FlatMonteCarlo search --games 100 --players 2
    python -m bench.flat_mc      # what a search spends its time on (``speed``)

Parameters (as a SPEC's ``@key=value``): ``budget_ms`` (200), ``iterations`` (a
number of playouts instead of a clock, for reproducible runs), ``seed``, and
``rollout``: ``random`` (the default) or ``policy`` (the ``search`` bot's own
rollout policy, to separate what the search adds from what its policy adds).
"""

from __future__ import annotations

import os
import random
import time
from typing import Any, Final

from bots.search import BudgetedSearch, playout
from client_sdk import View
from client_sdk.bot import fallback, log
from mammamia import Action, State
from mammamia.determinize import DeterminizationError, Sampler

_MARGIN: Final = 0.9
_FRESH: Final = 4


def random_playout(state: State, rng: random.Random) -> State:
    """Plays ``state`` (changed in place) to the end, every choice uniformly random."""
    choose = rng.choice
    while state.phase != "over":
        state.apply(choose(state.legal_actions()))
    return state


def win_share(state: State, seat: int) -> float:
    """Returns the seat's share of the win of a finished game (R-END-2)."""
    winners = state.winners()
    return 1.0 / len(winners) if seat in winners else 0.0


class FlatMonteCarlo(BudgetedSearch):
    """Flat Monte Carlo over sampled deals, sequential halving over every legal option."""

    name = "flat-mc"

    def __init__(
        self,
        budget_ms: float = 200,
        iterations: int | None = None,
        seed: int | None = None,
        rollout: str = "random",
    ) -> None:
        super().__init__(budget_ms, iterations, seed)
        if rollout not in ("random", "policy"):
            raise ValueError(f"rollout must be 'random' or 'policy', got {rollout!r}")
        self.rollout = rollout

    def _search(self, view: View) -> Action:
        started = time.perf_counter()
        stop = started + self.budget_ms / 1000 * _MARGIN
        rng = random.Random(self._seeds().getrandbits(64))
        legal = list(view.legal)
        if len(legal) == 1:
            return legal[0]
        seat = view.seat
        assert seat is not None
        try:
            sampler = Sampler(view)
        except DeterminizationError:
            return fallback(view)
        budget = self.iterations
        n = len(legal)
        totals = [0.0] * n
        counts = [0] * n
        alive = list(range(n))
        phases = max(1, (n - 1).bit_length())
        done = samples = 0
        out_of_time = False
        for phase in range(phases):
            phase_end = 0 if budget is None else (budget * (phase + 1)) // phases
            phase_stop = started + (stop - started) * (phase + 1) / phases
            while not out_of_time:
                if budget is not None and done >= phase_end:
                    break
                if budget is None and time.perf_counter() >= phase_stop:
                    break
                try:
                    base = (
                        sampler.sample(rng, attempts=20)
                        if samples % _FRESH == 0
                        else sampler.variant(rng)
                    )
                except DeterminizationError:
                    if not samples:
                        return fallback(view)
                    base = sampler.variant(rng)
                samples += 1
                for i in alive:
                    if budget is None and time.perf_counter() >= stop:
                        out_of_time = True
                        break
                    if budget is not None and done >= phase_end:
                        break
                    child = base.child(legal[i])
                    if self.rollout == "random":
                        random_playout(child, rng)
                    else:
                        playout(child)
                    totals[i] += win_share(child, seat)
                    counts[i] += 1
                    done += 1
            if len(alive) > 1 and phase < phases - 1:
                alive.sort(key=lambda i: -(totals[i] / counts[i] if counts[i] else -1.0))
                alive = alive[: max(1, (len(alive) + 1) // 2)]
            if out_of_time:
                break
        if not done:
            return fallback(view)
        best = max(alive, key=lambda i: totals[i] / counts[i] if counts[i] else -1.0)
        log.debug(
            "flat_mc_decision",
            bot=self.name,
            seat=seat,
            iterations=done,
            samples=samples,
            candidates=n,
            ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return legal[best]


def speed(
    players: int = 3, games: int = 6, every: int = 5, repeat: int = 5, seed: int = 0
) -> dict[str, Any]:
    """Returns what a search spends its time on, in-process, from mid-game positions
    of games between counter bots (every ``every``-th decision of ``games`` games):
    a view's sampler set up, a fresh deal, a variant deal, and playouts per second
    from a dealt state: uniformly random to the end of the game, the ``search``
    policy to the end of the game, and to the end of the round (what ``search``
    runs)."""
    from bots.counter import CounterBot
    from bots.search import playout as policy_playout
    from mammamia import RESOLVE, new_game, view_of

    views = []
    for g in range(games):
        state = new_game(players, seed=seed + g)
        bots = [CounterBot() for _ in range(players)]
        step = 0
        while not state.is_over:
            seat = state.to_act
            assert seat is not None
            view = view_of(state, seat)
            if step % every == every - 1:
                views.append(view)
            bot = bots[seat]
            state.apply(bot.resolve(view) if state.phase == RESOLVE else bot.turn(view))
            step += 1
    rng = random.Random(seed)
    clock = time.perf_counter
    timing = {"setup": 0.0, "fresh": 0.0, "variant": 0.0}
    dealt = []
    for view in views:
        t0 = clock()
        sampler = Sampler(view)
        t1 = clock()
        fresh = sampler.sample(rng)
        t2 = clock()
        variants = [sampler.variant(rng) for _ in range(repeat)]
        t3 = clock()
        timing["setup"] += t1 - t0
        timing["fresh"] += t2 - t1
        timing["variant"] += (t3 - t2) / repeat
        dealt.append((fresh, variants))
    rates = {}
    for name, run in (
        ("random to the end", lambda s: random_playout(s, rng)),
        ("policy to the end", policy_playout),
        ("policy to the round's end", lambda s: policy_playout(s, to_round_end=True)),
    ):
        count = 0
        t0 = clock()
        for _, variants in dealt:
            for state in variants:
                run(state.copy())
                count += 1
        rates[name] = round(count / (clock() - t0), 1)
    n = len(views)
    return {
        "players": players,
        "positions": n,
        "ms": {k: round(v / n * 1000, 2) for k, v in timing.items()},
        "playouts_per_second": rates,
        "load_average": list(os.getloadavg()),
        "cpus": os.cpu_count(),
    }


if __name__ == "__main__":
    import json
    import sys

    for count in (2, 3, 4, 5):
        print(json.dumps(speed(players=count)), flush=True)
        sys.stdout.flush()
