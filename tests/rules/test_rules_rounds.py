"""Scenario tables for the next round and the end (docs/rules.md sections 5 and 6)."""

from __future__ import annotations

import pytest
from rules_support import (
    Case,
    Refusal,
    bake,
    cards,
    check_case,
    check_refusal,
    decline,
    dump,
    early,
    ings,
    pass_,
    play,
    replay,
    stacked,
    then,
)

from mammamia import IllegalActionError, RecordError, Turn

# Round 1 as in ``early``, but yellow draws the Mamma Mia! card at its second
# refill, which empties the supply: red is asked about red-mushroom.
YELLOW_HOLDS = stacked(
    ["6 mushroom", "6 pepper"],
    "7 olive, 7 salami, salami, 2 mushroom, 2 pepper, 2 pineapple",
    waiters=["red-mushroom", "yellow-pepper"],
    mamma_mia_at=21,
    actions=[
        play(0, "6 mushroom", "red-mushroom", "supply"),
        play(1, "6 pepper", "yellow-pepper", "supply"),
        play(0, "7 olive", None, "supply"),
        play(1, "7 salami", None, "supply"),
    ],
)
# Nothing is baked, so round 2's supply is the Mamma Mia! card alone.
TINY = then(YELLOW_HOLDS, decline(0), decline(1))
ROUND_3 = then(TINY, play(1, "1 olive", draw="supply"))
# Yellow bakes yellow-pepper in round 1; red declines and keeps seven ingredients.
YELLOW_BAKES = then(
    YELLOW_HOLDS, decline(0), bake(1, hand="pineapple"), play(1, "5 pineapple", draw="supply")
)

# Red bakes red-mushroom with a salami from hand, yellow bakes yellow-pepper with a
# pineapple: the used pile takes each order's cards personal ingredient first.
USED_PILE = cards("salami, 4 mushroom, pineapple, 4 pepper")
ROUND_2_SUPPLY = cards("pepper, mamma-mia, 2 mushroom, pineapple, 3 pepper, 2 mushroom, salami")
BOTH_BAKE = then(
    early("red-mushroom", "yellow-pepper"),
    play(0, "2 pineapple", draw="supply"),
    bake(0, hand="salami"),
)
BOTH_BAKE["reshuffles"] = [ROUND_2_SUPPLY]

# Red and yellow hold seven orders each and pass: every round ends in a stalemate.
STALEMATE = stacked(
    ["6 salami", "6 olive"],
    actions=[
        play(0, "6 salami", "red-pineapple", "waiter"),
        play(1, "6 olive", "yellow-salami", "waiter"),
        pass_(0),
    ],
)
LEFT_IN_SUPPLY = list(reversed(STALEMATE["deal"]["supply"]))
STALEMATE["reshuffles"] = [LEFT_IN_SUPPLY, LEFT_IN_SUPPLY]
LAST_STALEMATE = then(STALEMATE, pass_(1), pass_(0), pass_(1), pass_(0))

CASES = [
    Case(
        "R-NEXT-1-leftovers-become-the-oven-in-canonical-order",
        BOTH_BAKE,
        bake(1, hand="pineapple"),
        {"oven": cards("7 salami, 2 pineapple, 2 mushroom, 2 pepper, 7 olive"), "table": ings()},
    ),
    Case(
        "R-NEXT-2-used-pile-and-mamma-mia-make-the-supply",
        BOTH_BAKE,
        bake(1, hand="pineapple"),
        {"supply": ROUND_2_SUPPLY, "used": 0},
        before={"used": 5},
    ),
    Case(
        "R-NEXT-2-after-a-stalemate-the-supply-carries-over",
        STALEMATE,
        pass_(1),
        {"supply": LEFT_IN_SUPPLY, "round": 2},
    ),
    Case(
        "R-NEXT-3-mamma-mia-holder-starts-the-next-round",
        then(YELLOW_HOLDS, decline(0)),
        decline(1),
        {
            "round": 2,
            "to_act": 1,
            "mamma_mia_holder": None,
            "seats.0.hand.ingredients": ings(salami=1, pineapple=2, mushroom=2, pepper=2),
            "seats.0.waiter.7": "red-mushroom",
            "seats.1.waiter.7": "yellow-pepper",
        },
        before={"mamma_mia_holder": 1},
    ),
    Case(
        "R-NEXT-3-after-a-stalemate-the-next-seat-starts",
        STALEMATE,
        pass_(1),
        {"round": 2, "to_act": 0},
    ),
    Case(
        "R-NEXT-4-supply-of-the-mamma-mia-card-alone",
        then(YELLOW_HOLDS, decline(0)),
        decline(1),
        {"supply": ["mamma-mia"]},
    ),
    Case(
        "R-NEXT-4-tiny-supply-round-ends-at-its-last-card",
        TINY,
        play(1, "1 olive", draw="supply"),
        {
            "round": 3,
            "to_act": 1,
            "supply": ["mamma-mia"],
            "seats.1.hand.ingredients": ings(pineapple=6),
            "oven": cards("7 salami, 6 mushroom, 6 pepper, 8 olive"),
        },
        before={"supply": ["mamma-mia"], "round": 2},
    ),
    Case(
        "R-END-1-third-resolution-ends-the-game",
        ROUND_3,
        play(1, "2 pineapple", draw="supply"),
        {"phase": "over", "to_act": None, "legal": [], "round": 3},
    ),
    Case(
        "R-RES-10-table-left-as-it-is-at-the-end",
        ROUND_3,
        play(1, "2 pineapple", draw="supply"),
        {"table": ings(salami=7, pineapple=2, mushroom=6, pepper=6, olive=8), "oven": []},
    ),
    Case(
        "R-END-2-ingredients-in-hand-break-a-tie",
        ROUND_3,
        play(1, "2 pineapple", draw="supply"),
        {"winners": [0], "seats.0.delivered": [], "seats.1.delivered": []},
    ),
    Case(
        "R-END-2-most-pizzas-wins",
        YELLOW_BAKES,
        play(1, "1 olive", draw="supply"),
        {
            "winners": [1],
            "seats.1.delivered": ["yellow-pepper"],
            "seats.0.hand.ingredients": ings(salami=1, pineapple=2, mushroom=2, pepper=2),
            "seats.1.hand.ingredients": ings(pineapple=1, pepper=4),
        },
    ),
    Case(
        "R-END-2-players-still-tied-share-the-win",
        LAST_STALEMATE,
        pass_(1),
        {"phase": "over", "winners": [0, 1]},
    ),
]

REFUSALS = [
    Refusal(
        "R-END-1-no-action-after-the-game",
        then(ROUND_3, play(1, "2 pineapple", draw="supply")),
        pass_(0),
        "R-END-1",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rounds(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda r: r.id)
def test_illegal_after_the_end(refusal: Refusal) -> None:
    check_refusal(refusal)


def test_R_END_1_apply_after_the_game_is_refused() -> None:
    state = replay(then(ROUND_3, play(1, "2 pineapple", draw="supply")))
    before = dump(state)
    with pytest.raises(IllegalActionError) as refused:
        state.apply(Turn.pass_turn())
    assert refused.value.rule == "R-END-1"
    assert dump(state) == before


@pytest.mark.parametrize(
    ("record", "ranking"),
    [
        pytest.param(
            then(ROUND_3, play(1, "2 pineapple", draw="supply")),
            [1, 2],
            id="R-END-2-ranking-by-ingredients",
        ),
        pytest.param(
            then(YELLOW_BAKES, play(1, "1 olive", draw="supply")),
            [2, 1],
            id="R-END-2-ranking-by-pizzas-first",
        ),
        pytest.param(
            then(LAST_STALEMATE, pass_(1)), [1, 1], id="R-END-2-ranking-equal-pairs-share"
        ),
    ],
)
def test_ranking(record: dict[str, object], ranking: list[int]) -> None:
    assert replay(record).ranking() == ranking


def test_R_NEXT_2_reshuffle_must_hold_exactly_the_new_supply() -> None:
    record = then(BOTH_BAKE, bake(1, hand="pineapple"))
    record["reshuffles"] = [[*ROUND_2_SUPPLY[:-1], "olive"]]
    with pytest.raises(RecordError) as refused:
        replay(record)
    assert refused.value.rule == "R-NEXT-2"
    assert "reshuffles[0]" in str(refused.value)
