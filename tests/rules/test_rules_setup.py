"""Scenario tables for the setup of a game (docs/rules.md section 2, R-SETUP-*)."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from rules_support import Json, dump, replay, rule_of, stacked

from mammamia import COLOURS, INGREDIENTS, MAMMA_MIA, IllegalActionError, RecordError, new_game
from mammamia.cards import ORDERS_BY_COLOUR

IN_PLAY = {2: 8, 3: 10, 4: 12, 5: 13}
"""Ingredient cards of each kind in play by player count (R-SETUP-2)."""


def ingredients_dealt(d: Json) -> Counter[str]:
    """Returns the ingredient cards in hands and supply of a fresh game's dump."""
    total: Counter[str] = Counter(c for c in d["supply"] if c != MAMMA_MIA)
    for seat in d["seats"]:
        total.update(seat["hand"]["ingredients"])
    return total


def opening(players: int, **kwargs: Any) -> Json:
    return dump(new_game(players, seed=players * 101, **kwargs))


Setup = tuple[str, Callable[[], Json], Callable[[Json], bool]]
"""A row: id, the new game's dump, what must hold of it."""


def setups_of(n: int) -> list[Setup]:
    """Returns the setup rows for a game of `n` players."""

    def build() -> Json:
        return opening(n)

    def seat_i_plays_colour_i(d: Json) -> bool:
        return [s["colour"] for s in d["seats"]] == list(COLOURS[:n])

    def ingredient_cards_in_play(d: Json) -> bool:
        return ingredients_dealt(d) == dict.fromkeys(INGREDIENTS, IN_PLAY[n])

    def mamma_mia_in_the_supply(d: Json) -> bool:
        return bool(
            d["supply"].count(MAMMA_MIA) == 1
            and len(d["supply"]) == IN_PLAY[n] * 5 - 6 * n + 1
            and d["mamma_mia_holder"] is None
        )

    return [
        (f"R-SETUP-1-{n}-players-seat-i-plays-colour-i", build, seat_i_plays_colour_i),
        (
            f"R-SETUP-2-{n}-players-{IN_PLAY[n] * 5}-ingredient-cards",
            build,
            ingredient_cards_in_play,
        ),
        (
            f"R-SETUP-3-{n}-players-six-ingredients-each",
            build,
            lambda d: all(sum(s["hand"]["ingredients"].values()) == 6 for s in d["seats"]),
        ),
        (f"R-SETUP-4-{n}-players-mamma-mia-in-the-supply", build, mamma_mia_in_the_supply),
        (
            f"R-SETUP-5-{n}-players-one-order-in-hand-seven-in-the-waiter",
            build,
            lambda d: all(
                len(s["hand"]["orders"]) == 1
                and len(s["waiter"]) == 7
                and sorted(s["hand"]["orders"] + s["waiter"])
                == sorted(o.id for o in ORDERS_BY_COLOUR[s["colour"]])
                for s in d["seats"]
            ),
        ),
        (
            f"R-SETUP-7-{n}-players-oven-starts-empty",
            build,
            lambda d: (
                d["oven"] == [] and d["used"] == 0 and d["round"] == 1 and d["phase"] == "turn"
            ),
        ),
    ]


SETUPS: list[Setup] = [row for n in range(2, 6) for row in setups_of(n)]
SETUPS += [
    (
        "R-SETUP-1-named-colours",
        lambda: opening(3, colours=("purple", "red", "green")),
        lambda d: [s["colour"] for s in d["seats"]] == ["purple", "red", "green"],
    ),
    (
        "R-SETUP-5-top-of-the-waiter-goes-to-hand",
        lambda: dump(
            replay(stacked(["6 salami", "6 olive"], waiters=["red-mixed, red-olive", ""]))
        ),
        lambda d: (
            d["seats"][0]["hand"]["orders"] == ["red-mixed"]
            and d["seats"][0]["waiter"][0] == "red-olive"
        ),
    ),
    (
        "R-SETUP-6-named-first-player",
        lambda: opening(4, first_player=3),
        lambda d: d["to_act"] == 3,
    ),
]


@pytest.mark.parametrize(("name", "build", "holds"), SETUPS, ids=[s[0] for s in SETUPS])
def test_setup(name: str, build: Callable[[], Json], holds: Callable[[Json], bool]) -> None:
    assert holds(build()), name


REFUSED_SETUPS = [
    ("R-SETUP-1-one-player", {"players": 1}),
    ("R-SETUP-1-six-players", {"players": 6}),
    ("R-SETUP-1-repeated-colour", {"players": 2, "colours": ("red", "red")}),
    ("R-SETUP-1-unknown-colour", {"players": 2, "colours": ("red", "blue")}),
    ("R-SETUP-1-too-few-colours", {"players": 3, "colours": ("red", "green")}),
    ("R-SETUP-6-first-player-not-a-seat", {"players": 3, "first_player": 3}),
]


@pytest.mark.parametrize(("name", "kwargs"), REFUSED_SETUPS, ids=[r[0] for r in REFUSED_SETUPS])
def test_refused_setup(name: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(IllegalActionError) as refused:
        new_game(**kwargs)
    assert refused.value.rule == rule_of(name)
    assert rule_of(name) in str(refused.value)


def _deal(players: int = 2, **change: Any) -> Json:
    record = stacked(["6 salami", "6 olive", "6 pepper"][:players])
    record["deal"].update(change)
    return record


REFUSED_DEALS = [
    ("R-SETUP-2-deal-with-a-card-too-many", lambda r: r["deal"]["supply"].append("olive")),
    ("R-SETUP-2-deal-with-a-card-missing", lambda r: r["deal"]["supply"].remove("olive")),
    ("R-SETUP-3-hand-of-five", lambda r: r["deal"]["supply"].append(r["deal"]["hands"][0].pop())),
    (
        "R-SETUP-4-mamma-mia-dealt-to-a-hand",
        lambda r: r["deal"]["hands"][0].__setitem__(0, MAMMA_MIA),
    ),
    ("R-SETUP-4-supply-without-mamma-mia", lambda r: r["deal"]["supply"].remove(MAMMA_MIA)),
    (
        "R-SETUP-5-waiter-with-another-colour",
        lambda r: r["deal"]["waiters"][0].__setitem__(0, "purple-mixed"),
    ),
    ("R-SETUP-5-waiter-short-of-an-order", lambda r: r["deal"]["waiters"][1].pop()),
]


@pytest.mark.parametrize(("name", "spoil"), REFUSED_DEALS, ids=[r[0] for r in REFUSED_DEALS])
def test_refused_deal(name: str, spoil: Callable[[Json], None]) -> None:
    record = _deal()
    spoil(record)
    with pytest.raises(RecordError) as refused:
        replay(record)
    assert refused.value.rule == rule_of(name)


def test_R_SETUP_6_first_player_drawn_from_the_seed() -> None:
    firsts = Counter(new_game(4, seed=seed).to_act for seed in range(200))
    assert set(firsts) == {0, 1, 2, 3}
    assert all(new_game(4, seed=s).to_act == new_game(4, seed=s).to_act for s in range(20))


@pytest.mark.parametrize("players", [2, 3, 5])
def test_R_SETUP_6_play_goes_round_the_table(players: int) -> None:
    state = new_game(players, seed=11)
    seats: list[int] = []
    while state.round == 1 and state.phase == "turn":
        assert state.to_act is not None
        seats.append(state.to_act)
        state.apply(state.legal_actions()[0])
    assert len(seats) > players
    assert all(b == (a + 1) % players for a, b in itertools.pairwise(seats))


def test_R_SETUP_8_same_seed_same_game() -> None:
    def game(seed: int) -> list[Json]:
        state = new_game(4, seed=seed)
        dumps = [dump(state)]
        while not state.is_over:
            legal = state.legal_actions()
            state.apply(legal[len(dumps) * 7919 % len(legal)])
            dumps.append(dump(state))
        return dumps

    assert game(5) == game(5)
    assert game(5)[0] != game(6)[0]


def test_R_SETUP_8_branches_do_not_disturb_the_shuffles() -> None:
    # Copies share the game's generator until one of them shuffles: branches that
    # run ahead to the end of the game must leave the original's shuffles alone.
    plain, branched = new_game(3, seed=8), new_game(3, seed=8)
    choose, wander = random.Random(8).choice, random.Random(9).choice
    step = 0
    while not plain.is_over:
        action = choose(plain.legal_actions())
        if step % 10 == 0:
            side = branched.copy()
            while not side.is_over:
                side.apply(wander(side.legal_actions()))
        plain.apply(action)
        branched.child(action)
        branched.apply(action)
        step += 1
    assert len(plain.reshuffles) == 2
    assert dump(branched) == dump(plain) and branched.reshuffles == plain.reshuffles
