"""The ladder simulation at a tiny size: duplicate sets rotate the seats over one
deal, the stopping rule reads the standings, and the figures come out whole."""

from __future__ import annotations

from collections import defaultdict

import pytest

from bench import ladder_sim
from bench.ladder_sim import Config, Games, order_is_right, run_ladder, set_ranks
from server.ladder.ratings import Rating


class Recording(Games):
    """Plays every game as usual and remembers each deal's seatings, in order."""

    def __init__(self) -> None:
        super().__init__(ladder_sim.factories(Config(kinds=("random", "greedy"))))
        self.seatings: dict[int, list[tuple[str, ...]]] = defaultdict(list)

    def ranks(self, seed: int, kinds: tuple[str, ...]) -> tuple[int, ...]:
        self.seatings[seed].append(kinds)
        return super().ranks(seed, kinds)


TINY = Config(kinds=("random", "greedy"), copies=2, players=(2, 3), max_matches=24, threshold=0.6)


def test_a_duplicate_set_plays_one_deal_once_per_rotation_of_the_seats() -> None:
    games = Recording()
    outcome = run_ladder("set-match", 0, TINY, games)
    assert outcome.played >= 1
    for seatings in games.seatings.values():
        first = seatings[0]
        assert seatings == [first[r:] + first[:r] for r in range(len(first))]


def test_plain_seating_plays_each_deal_once() -> None:
    games = Recording()
    run_ladder("plain", 0, TINY, games)
    assert all(len(seatings) == 1 for seatings in games.seatings.values())


def test_every_mode_plays_the_same_deals_in_the_same_order() -> None:
    seen = []
    for mode in ladder_sim.MODES:
        games = Recording()
        run_ladder(mode, 1, TINY, games)
        seen.append(list(games.seatings)[:2])
    assert seen[0] == seen[1] == seen[2]


def test_a_sets_combined_ranks_sum_its_matches_and_equal_sums_tie() -> None:
    assert set_ranks([[1, 2], [2, 1]]) == [1, 1]
    assert set_ranks([[1, 2, 3], [1, 3, 2], [2, 3, 1]]) == [1, 3, 2]


def test_the_order_is_right_only_by_kind_and_when_each_boundary_is_sure() -> None:
    kind_of = {"r1": "random", "r2": "random", "g1": "greedy"}
    kinds = ("random", "greedy")
    sure = {"g1": Rating(35.0, 1.0), "r1": Rating(20.0, 1.0), "r2": Rating(21.0, 1.0)}
    assert order_is_right(sure, kind_of, kinds, 0.95)
    close = {**sure, "g1": Rating(22.0, 1.0)}
    assert not order_is_right(close, kind_of, kinds, 0.95)  # right order, not sure
    wrong = {**sure, "r2": Rating(40.0, 1.0)}
    assert not order_is_right(wrong, kind_of, kinds, 0.95)


def test_run_reports_every_mode_of_every_ladder_kind() -> None:
    result = ladder_sim.run(
        ladders=2,
        kinds=("random", "greedy"),
        copies=1,
        which=["2"],
        max_matches=12,
        threshold=0.6,
        settle=True,
    )
    kind = result["kinds_of_ladder"]["2"]
    assert set(kind["modes"]) == set(ladder_sim.MODES)
    assert len(kind["outcomes"]) == 2 * len(ladder_sim.MODES)
    for figs in kind["modes"].values():
        assert figs["first"]["ladders"] == 2
        assert "settled" in figs
    assert all(o["first"] is None or o["first"] <= o["played"] for o in kind["outcomes"])
    assert len(ladder_sim.table(result)) > 3


def test_help_describes_the_stopping_rule(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        ladder_sim.main(["--help"])
    assert stop.value.code == 0
    assert "95% confidence" in capsys.readouterr().out


def test_luck_compares_a_plain_match_with_a_duplicate_set_over_the_same_deals() -> None:
    games = Recording()
    row = ladder_sim.luck("random", "greedy", 6, games)
    assert len(games.seatings) == 6
    assert all(
        sorted(seatings) == [("greedy", "random"), ("random", "greedy")]
        for seatings in games.seatings.values()
    )
    assert 0.0 <= row["score_plain"] <= 1.0 and 0.0 <= row["split_sets"] <= 1.0
    assert row["var_set"] <= 0.25
