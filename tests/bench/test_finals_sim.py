"""The finals simulation at a tiny size: rounds to the budget, the rule's stop, the
fixed schedule, and equal finalists that play apart."""

from __future__ import annotations

import random

from bench.finals_sim import Config, Trial, finalists, fixed_schedule, run, run_finals, table


def test_a_finals_is_played_round_by_round_to_the_budget() -> None:
    config = Config(kinds=("random", "greedy"), tables=(2,), budget=12, confidence=0.6)
    trial = run_finals(0, config)
    assert trial.matches == [2, 4, 6, 8, 10, 12]
    assert trial.right is not None and len(trial.right) == 6
    assert trial.reason in ("settled", "budget")
    assert trial.stopped is not None and trial.stopped in trial.matches
    assert run_finals(0, config) == trial  # seeded


def test_the_fixed_schedule_is_where_the_order_stays_right() -> None:
    def trial(right: list[bool]) -> Trial:
        return Trial(0, None, None, None, [3 * (i + 1) for i in range(len(right))], right)

    trials = [trial([False, True, True, True])] * 19 + [trial([False, False, True, True])]
    assert fixed_schedule(trials, 0.95) == 6  # 19 of 20 right from the second round
    assert fixed_schedule(trials, 0.99) == 9
    assert fixed_schedule([trial([True, False])], 0.95) is None


def test_equal_finalists_each_play_their_own_random_stream() -> None:
    makers = finalists(Config(kinds=("random",), tables=(2,), equal=True))
    assert list(makers) == ["random-1", "random-2"]
    a, b = (make() for make in makers.values())
    a.rng = random.Random("same")
    b.rng = random.Random("same")
    assert a.rng.random() != b.rng.random()
    result = run(Config(kinds=("random",), tables=(2,), budget=8, equal=True), trials=1)
    assert result["stopped_settled"] + result["stopped_budget"] == 1
    assert any("two random bots (equal)" in line for line in table(result))
