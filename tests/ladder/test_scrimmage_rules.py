"""A scrimmage's pure parts (its seats, its table, its test) and the scheduler's
claim, which keeps a scrimmage's bots out of the ladder's matches while it plays."""

from __future__ import annotations

import asyncio
import random

import pytest

from mammamia.sprt import Sprt
from server.db.ladder.scrimmages import ScrimmageMatch
from server.ladder.scheduler import Policy, Scheduler, Waiting
from server.ladder.scrimmage import (
    Challenge,
    ScrimmageError,
    checked,
    seatings,
    table,
    weigh,
    wilson,
)

from .test_scheduler import wait_for


def test_defaults_fill_in_and_bad_counts_are_refused() -> None:
    full = checked(Challenge("me", "", ("a",), players=0, matches=0))
    assert (full.players, full.matches, full.duplicate) == (2, 20, False)
    assert checked(Challenge("me", "", ("a",), sprt=Sprt())).duplicate  # pairs are deals
    for bad, said in [
        (Challenge("me", "", ()), "at least one opponent"),
        (Challenge("me", "", ("a", "me")), "its own opponent"),
        (Challenge("me", "", ("a",), players=3), "more seats"),
        (Challenge("me", "", ("a",), matches=201), "1 to 200"),
        (Challenge("me", "", ("a", "b"), players=3, matches=4, duplicate=True), "multiple of 3"),
        (Challenge("me", "", ("a",), matches=3, sprt=Sprt()), "an even count"),
    ]:
        with pytest.raises(ScrimmageError, match=said):
            checked(bad)


def test_opponents_take_turns_and_the_challengers_seat_turns() -> None:
    plan = list(seatings(checked(Challenge("me", "", ("a", "b", "c"), players=3, matches=4))))
    assert [names for names, _, _ in plan] == [
        ("me", "a", "b"),
        ("a", "me", "c"),  # the next two opponents (c, a), the challenger one seat on
        ("b", "c", "me"),
        ("me", "a", "b"),
    ]
    assert [(deal, rotation) for _, deal, rotation in plan] == [(0, 0), (1, 0), (2, 0), (3, 0)]


def test_duplicate_deals_rotate_one_table_through_every_seat() -> None:
    plan = list(
        seatings(checked(Challenge("me", "", ("a", "b"), players=2, matches=4, duplicate=True)))
    )
    assert plan == [
        (("me", "a"), 0, 0),
        (("a", "me"), 0, 1),
        (("me", "b"), 1, 0),
        (("b", "me"), 1, 1),
    ]


def _match(index: int, names: tuple[str, ...], ranks: tuple[int, ...]) -> ScrimmageMatch:
    return ScrimmageMatch(f"m{index}", "s", index, names, "finished", ranks, (1,) * len(names))


def test_the_table_counts_each_version_and_leaves_out_aborted_matches() -> None:
    matches = [
        _match(0, ("me@v1", "a"), (1, 2)),
        _match(1, ("a", "me@v1"), (1, 1)),  # a shared first place: a win each
        _match(2, ("me@v1", "b"), (2, 1)),
        ScrimmageMatch("m3", "s", 3, ("b", "me@v1"), "aborted"),
    ]
    lines = table(("me", "a", "b"), matches)
    assert [(ln.name, ln.version, ln.games, ln.wins) for ln in lines] == [
        ("me", "v1", 3, 2),
        ("a", "", 2, 1),
        ("b", "", 1, 1),
    ]
    assert lines[0].mean_rank == pytest.approx(4 / 3)
    assert lines[0].low < lines[0].win_rate < lines[0].high


def test_wilson_interval() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    low, high = wilson(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)
    low, high = wilson(10, 10)
    assert high == pytest.approx(1.0) and low == pytest.approx(0.7225, abs=1e-4)


def test_the_test_weighs_complete_deal_pairs_only() -> None:
    test = Sprt(0, 50, 0.05, 0.05)
    pair = [_match(0, ("me", "a"), (1, 2)), _match(1, ("a", "me"), (2, 1))]
    half = [_match(2, ("me", "a"), (1, 2))]  # its second game not played yet
    state = weigh(test, "me", pair + half)
    assert state.pentanomial == (0, 0, 0, 0, 1) and state.pairs == 1
    assert state.llr == pytest.approx(test.llr([0, 0, 0, 0, 1]))
    lost = weigh(test, "a", pair)  # the same pair, the other bot as B
    assert lost.pentanomial == (1, 0, 0, 0, 0)


def test_a_claim_waits_for_the_match_under_way_and_keeps_the_bots_out() -> None:
    async def scenario() -> list[tuple[str, ...]]:
        played: list[tuple[str, ...]] = []
        release = asyncio.Event()

        async def play(names: tuple[str, ...]) -> None:
            played.append(names)
            await release.wait()

        scheduler = Scheduler(
            Policy(2, 2, concurrency=4),
            lambda names: [Waiting(n, 25.0, 0) for n in names],
            rng=random.Random(1),
            settle=0.01,
        )
        loop = asyncio.create_task(scheduler.run(play))
        for name in ("a", "b"):
            scheduler.join(name)
        await wait_for(lambda: len(played) == 1)
        claim = asyncio.create_task(scheduler.claim(["a", "c"]))
        scheduler.join("c")
        scheduler.join("d")
        await asyncio.sleep(0.1)
        assert not claim.done()  # a is still in its match
        assert "c" not in scheduler.waiting  # and c is held for the scrimmage
        release.set()
        await asyncio.wait_for(claim, 5)
        await asyncio.sleep(0.1)
        # b and d play on; a and c, claimed, are seated in no ladder match.
        assert all(not {"a", "c"} & set(m) for m in played[1:])
        assert {"b", "d"} in [set(m) for m in played[1:]]
        scheduler.unclaim(["a", "c"])
        await wait_for(lambda: any({"a", "c"} & set(m) for m in played[1:]))
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        return played

    asyncio.run(asyncio.wait_for(scenario(), timeout=20))


def test_a_cancelled_claim_claims_nothing() -> None:
    async def scenario() -> None:
        scheduler = Scheduler(Policy(2, 2), lambda names: [], settle=0.01)
        scheduler.join("a")
        scheduler._busy.add("a")  # in a match
        claim = asyncio.create_task(scheduler.claim(["a"]))
        await asyncio.sleep(0.01)
        claim.cancel()
        await asyncio.gather(claim, return_exceptions=True)
        scheduler.unclaim([])  # a match's end wakes nothing that waits
        scheduler._busy.discard("a")
        assert scheduler.waiting == ["a"]

    asyncio.run(scenario())
