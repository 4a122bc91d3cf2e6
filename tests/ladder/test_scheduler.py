"""The scheduler's pure core: who plays whom."""

from __future__ import annotations

import asyncio
import random
import statistics
from collections.abc import Callable

import pytest

from server.ladder.scheduler import Policy, Scheduler, Waiting, form_matches, parse_players


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


# The loop: bots come and go, matches keep forming within the concurrency limit.


def test_the_loop_keeps_forming_matches_as_bots_come_and_go() -> None:
    async def scenario() -> tuple[list[tuple[str, ...]], int]:
        played: list[tuple[str, ...]] = []
        busy: set[str] = set()
        peak = 0
        release = asyncio.Event()

        async def play(names: tuple[str, ...]) -> None:
            nonlocal peak
            assert not busy & set(names), "a bot seated in two matches at once"
            busy.update(names)
            peak = max(peak, scheduler.running)
            played.append(names)
            await release.wait()
            busy.difference_update(names)

        def describe(names: list[str]) -> list[Waiting]:
            return [Waiting(n, 25.0, sum(n in m for m in played)) for n in names]

        scheduler = Scheduler(
            Policy(2, 2, concurrency=2), describe, rng=random.Random(1), settle=0.01
        )
        loop = asyncio.create_task(scheduler.run(play))
        for name in ("a", "b", "c", "d", "e"):
            scheduler.join(name)
        await wait_for(lambda: len(played) == 2)
        await asyncio.sleep(0.05)
        assert len(played) == 2 and scheduler.running == 2  # the limit holds
        assert scheduler.waiting == [n for n in "abcde" if n not in busy]
        scheduler.leave("e")
        release.set()
        await wait_for(lambda: len(played) >= 8)
        release.clear()
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        return played, peak

    played, peak = asyncio.run(asyncio.wait_for(scenario(), timeout=20))
    assert peak <= 2
    after_leaving = played[2:]  # formed after "e" left
    assert all("e" not in m for m in after_leaving)
    assert {n for m in after_leaving for n in m} == {"a", "b", "c", "d"}


async def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


def test_bots_taken_for_a_match_of_their_own_are_not_seated_until_given_back() -> None:
    async def scenario() -> None:
        played: list[tuple[str, ...]] = []

        async def play(names: tuple[str, ...]) -> None:
            played.append(names)
            await asyncio.Event().wait()

        def describe(names: list[str]) -> list[Waiting]:
            return [Waiting(n, 25.0, 0) for n in names]

        scheduler = Scheduler(Policy(2, 2, concurrency=4), describe, settle=0.01)
        loop = asyncio.create_task(scheduler.run(play))
        scheduler.join("a")
        # Not joined: nothing is taken, and the missing bot is named.
        assert scheduler.take(["a", "ghost"]) == ["ghost"]
        assert scheduler.take(["a"]) == []
        assert scheduler.take(["a"]) == ["a"]  # taken already
        scheduler.join("b")
        await asyncio.sleep(0.1)
        assert played == [] and scheduler.waiting == ["b"]
        scheduler.give_back(["a"])
        await wait_for(lambda: len(played) == 1)
        assert sorted(played[0]) == ["a", "b"]
        assert scheduler.take(["b"]) == ["b"]  # in a ladder match
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)

    asyncio.run(asyncio.wait_for(scenario(), timeout=20))
