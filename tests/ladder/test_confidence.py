"""Confidence of the standings: intervals and the odds that a neighbour is better."""

from __future__ import annotations

import random

import pytest

from server.ladder.confidence import interval, neighbours, p_better, p_wins, weakest
from server.ladder.ratings import Rating, initial, rate


def test_interval_is_two_sigmas_either_side() -> None:
    assert interval(Rating(25.0, 3.0)) == (19.0, 31.0)
    assert interval(Rating(25.0, 3.0), width=1.0) == (22.0, 28.0)


def test_equal_beliefs_are_a_coin_toss() -> None:
    assert p_better(initial(), initial()) == pytest.approx(0.5)
    assert p_wins(initial(), initial()) == pytest.approx(0.5)


def test_the_odds_of_the_two_orders_add_up_to_one() -> None:
    a, b = Rating(27.0, 2.0), Rating(24.0, 3.0)
    assert p_better(a, b) + p_better(b, a) == pytest.approx(1.0)
    assert p_better(a, b) > 0.5 > p_better(b, a)


def test_a_surer_belief_in_the_same_gap_is_more_confident() -> None:
    wide = p_better(Rating(27.0, 4.0), Rating(25.0, 4.0))
    narrow = p_better(Rating(27.0, 1.0), Rating(25.0, 1.0))
    assert 0.5 < wide < narrow < 1.0


def test_winning_the_next_match_stays_uncertain_where_the_order_is_sure() -> None:
    # Performance noise (beta) keeps a close match a gamble, however sure the skills.
    a, b = Rating(26.0, 0.2), Rating(25.0, 0.2)
    assert p_better(a, b) > 0.99
    assert 0.5 < p_wins(a, b) < 0.6


def test_rated_results_make_the_winner_likely_better() -> None:
    rng = random.Random(3)
    strong, weak = initial(), initial()
    for _ in range(100):
        # The strong bot wins four matches in five; the model's sigma falls slowly.
        ranks = [1, 2] if rng.random() < 0.8 else [2, 1]
        strong, weak = rate([strong, weak], ranks)
    assert p_better(strong, weak) > 0.95


def test_neighbours_compare_each_bot_with_the_next_and_the_last_with_none() -> None:
    standings = [Rating(30.0, 1.0), Rating(25.0, 2.0), Rating(24.0, 2.0)]
    lines = neighbours(standings)
    assert [line.low for line in lines] == [28.0, 21.0, 20.0]
    assert [line.high for line in lines] == [32.0, 29.0, 28.0]
    assert lines[0].p_better == pytest.approx(p_better(standings[0], standings[1]))
    assert lines[1].p_better == pytest.approx(p_better(standings[1], standings[2]))
    assert lines[2].p_better is None and lines[2].p_wins is None
    assert weakest(standings) == lines[1].p_better


def test_the_order_of_one_bot_or_none_is_certain() -> None:
    assert weakest([]) == 1.0
    assert weakest([initial()]) == 1.0
    assert neighbours([]) == []
