"""The ``search`` bot: legal answers, reproducible with a seed, within its budget.

Strength is measured in the arena (docs/search.md), not here: these games use a
few rollouts a decision so that the file runs in seconds.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bots.counter import CounterBot
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from bots.search import SearchBot, playout, value_of
from client_sdk import load_bot, play_local
from mammamia import RESOLVE, new_game, view_of

ROOT = Path(__file__).resolve().parents[2]


def test_search_is_a_built_in_bot() -> None:
    assert load_bot("search") is SearchBot
    assert SearchBot().name == "search" and SearchBot().budget_ms == 200


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_every_answer_is_legal(players: int) -> None:
    others = itertools.cycle([CounterBot, GreedyBot, RandomBot])
    lineup = [lambda: SearchBot(iterations=4, seed=players)] + [
        next(others) for _ in range(players - 1)
    ]
    result = play_local(lineup, seed=players)
    assert result.replaced == (0,) * players
    assert result.record.replay().is_over


def test_the_same_seed_and_iterations_play_the_same_game() -> None:
    def game(seed: int) -> str:
        return play_local(
            [lambda: SearchBot(iterations=6, seed=seed), CounterBot], seed=11
        ).record.dumps()

    assert game(1) == game(1)
    # Without a seed of its own, the game's seed (play_local seeds the bot's rng).
    a = play_local([lambda: SearchBot(iterations=6), CounterBot], seed=12).record
    b = play_local([lambda: SearchBot(iterations=6), CounterBot], seed=12).record
    assert a.dumps() == b.dumps()


def test_resolutions_are_searched_too() -> None:
    # A game where the bot is asked how to resolve its orders: each answer is legal
    # and comes from rollouts (the counter's choice is only the fallback).
    bot = SearchBot(iterations=6, seed=3)
    asked = []
    original = bot.resolve

    def resolve(view):  # type: ignore[no-untyped-def]
        answer = original(view)
        asked.append((answer in view.legal, bot.last_iterations))
        return answer

    bot.resolve = resolve  # type: ignore[method-assign]
    for seed in range(4):
        play_local([bot, CounterBot()], seed=seed)
        if asked:
            break
    assert asked and all(legal for legal, _ in asked)
    assert any(iterations == 6 for _, iterations in asked)


def test_iterations_are_the_budget_and_logged_at_debug_level() -> None:
    state = new_game(3, seed=4)
    while state.phase != RESOLVE and len(state.events) < 12:
        state.apply(state.legal_actions()[0])
    view = view_of(state, state.to_act)
    bot = SearchBot(iterations=10, seed=2)
    with capture_logs() as logs:
        action = bot.turn(view)
    assert action in view.legal and bot.last_iterations == 10
    [entry] = [e for e in logs if e["event"] == "search_decision"]
    assert entry["log_level"] == "debug" and entry["iterations"] == 10


class FakeClock:
    """A clock that moves on by ``step`` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.mark.parametrize("budget_ms", [5, 20, 100])
def test_the_time_budget_is_kept_by_the_clock(budget_ms: int) -> None:
    # Each read of the injected clock costs 0.2 ms: the search stops within the
    # budget by that clock, however many rollouts it fits in.
    state = new_game(2, seed=7)
    for _ in range(9):
        state.apply(state.legal_actions()[-1])
    view = view_of(state, state.to_act)
    bot = SearchBot(budget_ms=budget_ms, seed=1)
    clock = FakeClock(0.0002)
    bot.clock = clock
    action = bot.turn(view)
    assert action in view.legal
    assert clock.now * 1000 <= budget_ms * 1.1
    if budget_ms >= 20:
        assert bot.last_iterations > 0


class StallingClock(FakeClock):
    """A FakeClock that jumps ``stall`` seconds once, at its ``at``-th read."""

    def __init__(self, step: float, at: int, stall: float) -> None:
        super().__init__(step)
        self.reads = 0
        self.at = at
        self.stall = stall

    def __call__(self) -> float:
        self.reads += 1
        if self.reads == self.at:
            self.now += self.stall
        return super().__call__()


def test_one_stalled_deal_does_not_keep_the_search_off() -> None:
    # The fifth read of a decision's clock (the first is the decision's start, for
    # the margin) ends its first deal: a second's stall
    # there (the process waiting for a core) makes dealing look far too slow for a
    # 20 ms budget. The next decisions answer at once, but search again soon.
    state = new_game(2, seed=7)
    for _ in range(9):
        state.apply(state.legal_actions()[-1])
    view = view_of(state, state.to_act)
    bot = SearchBot(budget_ms=20, seed=1)
    bot.clock = StallingClock(0.0002, at=5, stall=1.0)
    bot.turn(view)
    searched = []
    for _ in range(12):
        bot.clock = FakeClock(0.0002)
        assert bot.turn(view) in view.legal
        searched.append(bot.last_iterations > 0)
    assert not searched[0] and any(searched), searched


def test_a_late_answer_grows_the_margin_and_answers_on_time_shrink_it_back() -> None:
    # A 60 ms stall in one decision of a 50 ms budget (the process waiting for a
    # core): the answer is late by the clock, and the bot keeps back what it overshot.
    state = new_game(2, seed=7)
    for _ in range(9):
        state.apply(state.legal_actions()[-1])
    view = view_of(state, state.to_act)
    bot = SearchBot(budget_ms=50, seed=1)
    bot.clock = FakeClock(0.0002)
    bot.turn(view)
    assert bot.margin_s == 0.0  # on time: nothing kept back
    bot.clock = StallingClock(0.0002, at=20, stall=0.06)
    bot.turn(view)
    late = bot.margin_s
    assert 0.005 < late <= 0.025  # the overshoot, at most half the budget
    # The next decision stops earlier by the margin.
    clock = FakeClock(0.0002)
    bot.clock = clock
    bot.turn(view)
    assert clock.now <= 0.05 * 0.9 - late * 0.9 + 0.002
    margins = [bot.margin_s]
    for _ in range(30):
        bot.clock = FakeClock(0.0002)
        assert bot.turn(view) in view.legal
        margins.append(bot.margin_s)
    assert margins == sorted(margins, reverse=True) and margins[-1] < late / 10


def test_the_sdk_reported_lateness_grows_the_margin_by_what_the_bot_did_not_see() -> None:
    bot = SearchBot(budget_ms=50, seed=1)
    bot.on_answered(0.049)  # on time
    assert bot.margin_s == 0.0
    bot.on_answered(0.06)  # 10 ms late, outside the bot's own clock
    assert bot.margin_s == pytest.approx(0.01)
    bot.on_answered(1.0)  # never more than half the budget
    assert bot.margin_s == pytest.approx(0.025)
    # With iterations, no clock and no margin: the same decisions on any machine.
    fixed = SearchBot(iterations=4, seed=1)
    fixed.on_answered(1.0)
    assert fixed.margin_s == 0.0


def test_a_view_it_cannot_sample_gets_the_counter_bots_answer() -> None:
    state = new_game(2, seed=8)
    for _ in range(5):
        state.apply(state.legal_actions()[0])
    view = view_of(state, state.to_act)
    broken = dataclasses.replace(view, history=view.history[3:])
    answer = SearchBot(iterations=4, seed=1).turn(broken)
    assert answer == CounterBot().turn(view) and answer in view.legal


def test_rollouts_play_to_the_round_end_or_the_end_and_value_the_winner() -> None:
    state = new_game(3, seed=9)
    end = playout(state.copy(), to_round_end=True)
    assert end.round == 2 and end.phase == "turn"
    over = playout(state.copy())
    assert over.is_over
    winner, loser = over.winners()[0], over.ranking().index(max(over.ranking()))
    assert value_of(over, winner) >= 1.0 / len(over.winners()) > value_of(over, loser)


def test_the_same_seed_plays_the_same_game_in_another_process() -> None:
    # Nothing depends on the order of a set of strings (which changes with the hash
    # seed of each process).
    script = (
        "from client_sdk.logs import configure_quiet; configure_quiet(); "
        "from bots.search import SearchBot; from bots.counter import CounterBot; "
        "from client_sdk import play_local; "
        "print(play_local([lambda: SearchBot(iterations=4, seed=5), CounterBot], "
        "seed=13).record.dumps())"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": str(h)},
            timeout=120,
            cwd=ROOT,
            check=True,
        ).stdout
        for h in (1, 2)
    ]
    assert runs[0] == runs[1] and runs[0].startswith("{")


@pytest.mark.parametrize(
    ("key", "value"), [("budget_ms", 0), ("iterations", 0), ("candidates", 1), ("seed", "x")]
)
def test_bad_parameters_are_refused_naming_them(key: str, value: object) -> None:
    with pytest.raises(ValueError, match=key):
        SearchBot(**{key: value})  # type: ignore[arg-type]
