"""The finals' pure logic: the field, balanced rounds, the final table, the stopping rule."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest

from server.competition.finals import (
    Played,
    Round,
    Stop,
    balanced,
    evidence,
    field,
    final_table,
    head_to_head,
    next_round,
    rotations,
    round_matches,
    settled,
    stop,
    table_size,
)
from server.ladder.ratings import Result, replay

NAMES = tuple(f"bot-{i}" for i in range(1, 9))


def play_rounds(finalists: tuple[str, ...], sizes: tuple[int, ...], count: int) -> list[Round]:
    played: list[Round] = []
    for _ in range(count):
        played.append(next_round(finalists, sizes, played, seed=7))
    return played


def test_field_is_the_top_k_in_standings_order_or_the_given_list() -> None:
    assert field(NAMES, 4) == NAMES[:4]
    assert field(NAMES, 4, chosen=["bot-8", "bot-1"]) == ("bot-8", "bot-1")
    with pytest.raises(ValueError, match="only 8 bots"):
        field(NAMES, 9)
    with pytest.raises(ValueError, match="at least 2"):
        field(NAMES, 1)
    with pytest.raises(ValueError, match="bot-1 more than once"):
        field(NAMES, 2, chosen=["bot-1", "bot-1"])


def test_table_size_whole_field_else_fewest_byes_then_largest() -> None:
    assert table_size(4, (2, 3, 4, 5)) == 4
    assert table_size(6, (2, 3, 4, 5)) == 3
    assert table_size(8, (2, 3, 4, 5)) == 4
    assert table_size(7, (2, 3, 4, 5)) == 3  # one bye a round (2 would leave one too)
    assert table_size(7, (4,)) == 4  # three byes a round
    with pytest.raises(ValueError, match="R-SETUP-1"):
        table_size(4, (6,))
    with pytest.raises(ValueError, match="at least 3"):
        table_size(2, (3,))


def test_rotations_move_each_name_one_seat_on_per_match() -> None:
    seats = rotations(next_round(NAMES[:3], (3,), [], seed=1).tables[0])
    first = seats[0]
    for k, order in enumerate(seats):
        for s, name in enumerate(first):
            assert order[(s + k) % 3] == name


@pytest.mark.parametrize(
    ("count", "sizes", "cycle"),
    [(4, (2, 3, 4, 5), 1), (6, (2, 3), 1), (7, (2, 3, 4, 5), 7), (5, (2,), 5), (8, (3,), 4)],
)
def test_rounds_balance_matches_and_seats_over_a_cycle(
    count: int, sizes: tuple[int, ...], cycle: int
) -> None:
    finalists = NAMES[:count]
    played = play_rounds(finalists, sizes, 2 * cycle)
    for r in played:
        seated = [n for t in r.tables for n in t.names]
        assert sorted(seated + list(r.byes)) == sorted(finalists)
        assert len({len(t.names) for t in r.tables}) == 1
    # Balanced after every whole cycle of byes, and not before when there are byes.
    for done in range(1, 2 * cycle + 1):
        assert balanced(finalists, played[:done]) == (done % cycle == 0)
    seats: Counter[tuple[str, int]] = Counter()
    for r in played:
        for t in r.tables:
            for order in rotations(t):
                seats.update((n, i) for i, n in enumerate(order))
    assert len(set(seats.values())) == 1  # every finalist in every seat equally often


def test_rounds_are_deterministic_and_vary_the_pairings() -> None:
    finalists = NAMES[:8]
    first = play_rounds(finalists, (4,), 3)
    assert first == play_rounds(finalists, (4,), 3)
    other: list[Round] = []
    for _ in range(3):
        other.append(next_round(finalists, (4,), other, seed=8))
    assert other != first
    tables = [frozenset(t.names) for r in first for t in r.tables]
    assert len(set(tables)) == len(tables)  # no table of four met twice in three rounds


def test_final_table_rates_afresh_from_the_results_in_order() -> None:
    finalists = ("a", "b", "c")
    results = [
        Played(("a", "b", "c"), (1, 2, 3)),
        Played(("b", "c", "a"), (2, 3, 1), absent=("c",)),
        Played(("c", "a", "b"), (2, 1, 2)),
    ]
    table = final_table(finalists, results)
    ratings = replay(Result(r.names, r.ranks) for r in results)
    assert [line.name for line in table.lines] == ["a", "b", "c"]
    top = table.lines[0]
    assert (top.rank, top.mu, top.sigma) == (1, ratings["a"].mu, ratings["a"].sigma)
    assert top.low == pytest.approx(top.mu - 2 * top.sigma)
    assert [line.matches for line in table.lines] == [3, 3, 3]
    assert [line.wins for line in table.lines] == [3, 0, 0]
    assert [line.absent for line in table.lines] == [0, 0, 1]
    assert table.lines[-1].p_better is None
    assert table.lines[0].p_better is not None and table.lines[0].p_better > 0.5
    with pytest.raises(ValueError, match="z, not in the field"):
        final_table(finalists, [Played(("a", "z"), (1, 2))])


def test_a_finalist_without_results_keeps_the_initial_rating_in_field_order() -> None:
    table = final_table(("x", "y"), [])
    assert [line.name for line in table.lines] == ["x", "y"]
    assert table.lines[0].p_better == 0.5
    assert stop(table, 1, 0.95, budget=10) is None  # no match played yet


def test_the_finals_stop_when_the_top_is_settled_or_the_budget_is_spent() -> None:
    finalists = ("strong", "weak")
    results: list[Played] = []
    stopped = None
    while stopped is None:
        results.append(Played(("strong", "weak"), (1, 2)))
        results.append(Played(("weak", "strong"), (2, 1)))
        table = final_table(finalists, results)
        stopped = stop(table, 1, 0.95, budget=1000)
    assert stopped.reason == "settled"
    assert settled(table, 1, 0.95)
    assert not settled(final_table(finalists, results[:2]), 1, 0.95)
    # Two equal bots (every match a tie): the budget ends it.
    ties = [Played(("p", "q"), (1, 1))] * 20
    assert stop(final_table(("p", "q"), ties), 1, 0.95, budget=20) == stop(
        final_table(("p", "q"), ties), 1, 0.95, budget=10
    )
    equal = stop(final_table(("p", "q"), ties), 1, 0.95, budget=20)
    assert equal is not None and (equal.reason, equal.matches) == ("budget", 20)
    assert stop(final_table(("p", "q"), ties), 1, 0.95, budget=21) is None


def test_settled_waits_for_a_balanced_table_and_the_budget_is_never_overrun() -> None:
    uneven = final_table(("a", "b", "c"), [Played(("a", "b"), (1, 2))] * 30)
    assert not uneven.balanced
    assert stop(uneven, 1, 0.95, budget=100) is None
    assert stop(uneven, 1, 0.95, budget=100, next_matches=71) == Stop("budget", 30)
    assert round_matches(7, (2, 3, 4, 5)) == 6 and round_matches(4, (2, 3)) == 4
    with pytest.raises(ValueError, match="top 0"):
        settled(uneven, 0)
    with pytest.raises(ValueError, match=r"confidence 1\.5"):
        settled(uneven, 1, 1.5)


def test_evidence_is_exact_and_a_fair_bet_between_equal_finalists() -> None:
    assert evidence(0, 0) == 1
    for n in range(1, 30):
        assert evidence(n, 0) == Fraction(2**n, n + 1)
    # A test martingale under "equal": after any record, the next set leaves the
    # expected evidence where it was, so no way of looking can inflate it.
    for won in range(25):
        for lost in range(25):
            after = (evidence(won + 1, lost) + evidence(won, lost + 1)) / 2
            assert after == evidence(won, lost), (won, lost)
    with pytest.raises(ValueError, match="negative"):
        evidence(-1, 3)


def test_equal_finalists_are_called_ordered_at_most_one_time_in_twenty_however_long() -> None:
    # Every path of 300 fair sets, weighed exactly: the chance that the evidence for
    # either finalist ever reaches 20 (the 95% rule) on the way.
    steps, bound = 300, 20
    reached = Fraction(0)
    alive = {(0, 0): Fraction(1)}
    for _ in range(steps):
        following: dict[tuple[int, int], Fraction] = {}
        for (won, lost), p in alive.items():
            for record in ((won + 1, lost), (won, lost + 1)):
                ahead, behind = max(record), min(record)
                if evidence(ahead, behind) >= bound:
                    reached += p / 2
                else:
                    following[record] = following.get(record, Fraction(0)) + p / 2
        alive = following
    assert 0.01 < reached <= Fraction(1, 20)


def test_head_to_head_sums_each_duplicate_set_and_skips_ties_and_absent_pairs() -> None:
    results = [
        # One set of three rotations: a's, b's and c's ranks each sum to 6: ties.
        Played(("a", "b", "c"), (1, 2, 3), set_id="s1"),
        Played(("c", "a", "b"), (1, 2, 3), set_id="s1"),
        Played(("b", "c", "a"), (1, 2, 3), set_id="s1"),
        # a ahead of b in both matches of a set of two.
        Played(("a", "b"), (1, 2), set_id="s2"),
        Played(("b", "a"), (2, 1), set_id="s2"),
        # b ahead: matches without a set are sets of their own.
        Played(("b", "a"), (1, 2)),
        Played(("a", "c"), (1, 2)),
    ]
    assert head_to_head(results, "a", "b") == (1, 1)
    assert head_to_head(results, "b", "a") == (1, 1)
    assert head_to_head(results, "a", "c") == (1, 0)
    assert head_to_head(results, "b", "c") == (0, 0)


def test_settled_needs_the_sets_to_agree_with_the_order_and_enough_of_them() -> None:
    def sets(winner: str, loser: str, count: int, start: int = 0) -> list[Played]:
        return [
            m
            for i in range(start, start + count)
            for m in (
                Played((winner, loser), (1, 2), set_id=f"s{i}"),
                Played((loser, winner), (2, 1), set_id=f"s{i}"),
            )
        ]

    # 2^n / (n + 1) first reaches 20 at n = 8 sets won in a row.
    assert not settled(final_table(("x", "y"), sets("x", "y", 7)), 1, 0.95)
    table = final_table(("x", "y"), sets("x", "y", 8))
    assert (table.lines[0].sets_won, table.lines[0].sets_lost) == (8, 0)
    assert table.lines[0].evidence == pytest.approx(256 / 9)
    assert settled(table, 1, 0.95)
    assert table.lines[-1].evidence is None
    # As many sets each way: never settled, however many.
    even = sets("x", "y", 40) + sets("y", "x", 40, start=40)
    assert not settled(final_table(("x", "y"), even), 1, 0.95)


def test_a_cut_off_match_counts_for_the_balance_only() -> None:
    played = [Played(("a", "b"), (1, 2), set_id="s"), Played(("b", "a"), (2, 1), set_id="s")]
    # Four matches with c were cut off: without them the table looks uneven, with
    # them every finalist was dealt four, and the cut matches change no line.
    cut = [("a", "c"), ("c", "b"), ("c", "a"), ("b", "c")]
    uneven = final_table(("a", "b", "c"), played)
    even = final_table(("a", "b", "c"), played, cut)
    assert not uneven.balanced and even.balanced
    assert even.lines == uneven.lines and even.matches == 2
    assert not final_table(("a", "b", "c"), played, cut[:3]).balanced
