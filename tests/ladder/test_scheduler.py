"""The scheduler's pure core: who plays whom."""

from __future__ import annotations

import random
import statistics

import pytest

from server.ladder.scheduler import Policy, Waiting, form_matches, parse_players


def pool(n: int, games: int = 0, spread: float = 0.0) -> list[Waiting]:
    return [Waiting(f"bot{i}", 25.0 + spread * i, games) for i in range(n)]


@pytest.mark.parametrize("seed", range(20))
def test_matches_respect_the_players_range_and_seat_each_bot_once(seed: int) -> None:
    rng = random.Random(seed)
    policy = Policy(min_players=3, max_players=4, concurrency=10)
    matches = form_matches(pool(17), policy, running=0, rng=rng)
    seated = [name for match in matches for name in match]
    assert len(seated) == len(set(seated))
    assert all(3 <= len(match) <= 4 for match in matches)
    assert len(seated) >= 17 - 3  # only a remainder too small for a match waits


def test_a_bot_listed_twice_is_seated_once() -> None:
    waiting = [Waiting("a", 25, 0), Waiting("a", 25, 0), Waiting("b", 25, 0)]
    matches = form_matches(waiting, Policy(2, 5), 0, random.Random(1))
    assert matches == [("a", "b")] or matches == [("b", "a")]


def test_too_few_bots_form_no_match() -> None:
    assert form_matches(pool(1), Policy(2, 5), 0, random.Random(0)) == []
    assert form_matches(pool(2), Policy(3, 5), 0, random.Random(0)) == []


def test_concurrency_limits_new_matches_by_those_running() -> None:
    policy = Policy(2, 2, concurrency=3)
    assert len(form_matches(pool(10), policy, running=0, rng=random.Random(0))) == 3
    assert len(form_matches(pool(10), policy, running=2, rng=random.Random(0))) == 1
    assert form_matches(pool(10), policy, running=3, rng=random.Random(0)) == []


@pytest.mark.parametrize("seed", range(10))
def test_the_least_played_bot_is_always_seated(seed: int) -> None:
    waiting = [Waiting(f"veteran{i}", 25.0, 50 + i) for i in range(6)]
    waiting.insert(3, Waiting("newcomer", 25.0, 0))
    matches = form_matches(waiting, Policy(2, 2, concurrency=1), 0, random.Random(seed))
    assert len(matches) == 1 and "newcomer" in matches[0]


def test_close_ratings_meet_more_often_than_chance_and_far_ones_still_meet() -> None:
    # The anchor (fewest games) is rated 25; the others spread from 25 to 70.
    rng = random.Random(7)
    anchor = Waiting("anchor", 25.0, 0)
    others = [Waiting(f"o{i}", 25.0 + 5 * i, 1) for i in range(10)]
    gaps = []
    partners = set()
    for _ in range(2000):
        (match,) = form_matches([anchor, *others], Policy(2, 2, concurrency=1), 0, rng)
        (partner,) = [n for n in match if n != "anchor"]
        partners.add(partner)
        gaps.append(int(partner[1:]) * 5)
    uniform_gap = statistics.mean(5 * i for i in range(10))
    assert statistics.mean(gaps) < uniform_gap / 2
    assert len(partners) == 10


def test_same_seed_same_matches() -> None:
    waiting = pool(12, spread=1.5)
    one = form_matches(waiting, Policy(2, 5, 4), 0, random.Random(42))
    two = form_matches(waiting, Policy(2, 5, 4), 0, random.Random(42))
    assert one == two


def test_sizes_vary_across_the_range() -> None:
    rng = random.Random(3)
    sizes = {len(m) for _ in range(200) for m in form_matches(pool(5), Policy(2, 5, 1), 0, rng)}
    assert sizes == {2, 3, 4, 5}


@pytest.mark.parametrize(("text", "expected"), [("2-5", (2, 5)), ("3", (3, 3)), ("4-4", (4, 4))])
def test_parse_players(text: str, expected: tuple[int, int]) -> None:
    assert parse_players(text) == expected


@pytest.mark.parametrize("text", ["1-5", "2-6", "5-2", "x", "2-", ""])
def test_parse_players_refuses_bad_ranges(text: str) -> None:
    with pytest.raises(ValueError, match="ladder players"):
        parse_players(text)
