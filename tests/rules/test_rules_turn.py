"""Scenario tables for a turn (docs/rules.md section 3, R-TURN-*): scene, action, state after."""

from __future__ import annotations

import pytest
from rules_support import (
    Case,
    Refusal,
    cards,
    check_case,
    check_refusal,
    ings,
    pass_,
    play,
    stacked,
    then,
)

# Two players, red (seat 0, first) and yellow. Red holds red-pineapple, yellow
# yellow-salami (the top of each waiter); the supply starts pineapple, pineapple,
# pepper, pineapple; the Mamma Mia! card lies at the bottom.
OPEN = stacked(["2 salami, 3 olive, pepper", "6 mushroom"], "2 pineapple, pepper, pineapple")
RED_WAITER = [
    "red-mushroom",
    "red-pepper",
    "red-olive",
    "red-mixed",
    "red-bombastica",
    "red-minimale",
    "red-monotoni",
]

# Both seats fill their hands from their waiters: yellow empties its waiter and
# holds seven orders; red keeps one order in its waiter.
WAITERS = then(
    OPEN,
    play(0, "2 salami", draw="waiter"),
    play(1, "6 mushroom", "yellow-salami", "waiter"),
    play(0, "3 olive", "red-mushroom", "waiter"),
)
# Yellow (seven orders) passes; red then plays its last ingredient.
LAST_INGREDIENT = then(WAITERS, pass_(1))
# Red's waiter is empty and its hand holds orders only, below seven.
ORDERS_ONLY = then(LAST_INGREDIENT, play(0, "1 pepper", "red-pepper", "waiter"), pass_(1))

# The Mamma Mia! card is the second card of the supply.
MAMMA_MIA_SECOND = stacked(["2 salami, 3 olive, pepper", "6 mushroom"], "pineapple", mamma_mia_at=1)

# The round ends when the supply's last card is drawn: red and yellow each empty
# their hands twice, drawing 28 ingredient cards; the Mamma Mia! card is the
# supply's last card.
DRAINED = stacked(
    ["6 mushroom", "6 pepper"],
    "7 olive, 7 salami, salami, 2 mushroom, 2 pepper, 2 pineapple",
    waiters=["red-mushroom", "yellow-pepper"],
    actions=[
        play(0, "6 mushroom", "red-mushroom", "supply"),
        play(1, "6 pepper", "yellow-pepper", "supply"),
        play(0, "7 olive", None, "supply"),
        play(1, "7 salami", None, "supply"),
    ],
)
# The same, with the Mamma Mia! card drawn at red's second refill: yellow's
# second refill then takes the supply's last (ingredient) card.
DRAINED_EARLY = stacked(
    ["6 mushroom", "6 pepper"],
    "7 olive, 7 salami, salami, 2 mushroom, 2 pepper, 2 pineapple",
    waiters=["red-mushroom", "yellow-pepper"],
    mamma_mia_at=14,
    actions=[
        play(0, "6 mushroom", "red-mushroom", "supply"),
        play(1, "6 pepper", "yellow-pepper", "supply"),
        play(0, "7 olive", None, "supply"),
    ],
)

# Red and yellow empty their hands and refill with seven orders each.
SEVEN_ORDERS = stacked(
    ["6 salami", "6 olive"],
    actions=[
        play(0, "6 salami", "red-pineapple", "waiter"),
        play(1, "6 olive", "yellow-salami", "waiter"),
    ],
)

CASES = [
    Case(
        "R-TURN-1-play-two-of-one-kind",
        OPEN,
        play(0, "2 salami", draw="supply"),
        {
            "oven": ["salami", "salami"],
            "to_act": 1,
            "seats.0.hand.ingredients": ings(pineapple=2, pepper=1, olive=3),
            "seats.0.hand.orders": ["red-pineapple"],
        },
    ),
    Case(
        "R-TURN-1-play-every-card-of-a-kind",
        OPEN,
        play(0, "3 olive", draw="supply"),
        {
            "oven": cards("3 olive"),
            "supply.0": "pineapple",
            "seats.0.hand.ingredients": ings(salami=2, pineapple=2, pepper=2),
        },
    ),
    Case(
        "R-TURN-2-order-on-top-of-the-ingredients",
        OPEN,
        play(0, "1 pepper", "red-pineapple", "waiter"),
        {
            "oven": ["pepper", "red-pineapple"],
            "seats.0.hand.ingredients": ings(salami=2, olive=3),
            "seats.0.hand.orders": ["red-mushroom", "red-pepper"],
        },
    ),
    Case(
        "R-TURN-2-order-is-optional",
        OPEN,
        play(0, "1 pepper", draw="supply"),
        {"oven": ["pepper"], "seats.0.hand.orders": ["red-pineapple"]},
    ),
    Case(
        "R-TURN-3-pass-without-ingredients-then-draw",
        ORDERS_ONLY,
        pass_(0, "supply"),
        {
            "oven": cards(
                "2 salami, 6 mushroom, yellow-salami, 3 olive, red-mushroom, pepper, red-pepper"
            ),
            "seats.0.hand.ingredients": ings(pineapple=1),
            "supply.0": "pineapple",
            "to_act": 1,
        },
        before={"seats.0.hand.ingredients": ings(), "seats.0.waiter": []},
    ),
    Case(
        "R-TURN-4-refill-from-supply-to-seven",
        OPEN,
        play(0, "3 olive", "red-pineapple", "supply"),
        {
            "seats.0.hand.ingredients": ings(salami=2, pineapple=3, pepper=2),
            "seats.0.hand.orders": [],
            "supply.0": "salami",
        },
    ),
    Case(
        "R-TURN-4-refill-from-waiter-only",
        OPEN,
        play(0, "2 salami", draw="waiter"),
        {
            "seats.0.hand.orders": ["red-mushroom", "red-pepper", "red-pineapple"],
            "seats.0.hand.ingredients": ings(pepper=1, olive=3),
            "seats.0.waiter": RED_WAITER[2:],
            "supply.0": "pineapple",
        },
    ),
    Case(
        "R-TURN-4-waiter-runs-out-before-seven",
        LAST_INGREDIENT,
        play(0, "1 pepper", "red-pepper", "waiter"),
        {
            "seats.0.waiter": [],
            "to_act": 1,
            "seats.0.hand.orders": [
                "red-bombastica",
                "red-minimale",
                "red-mixed",
                "red-monotoni",
                "red-olive",
                "red-pineapple",
            ],
        },
        before={"seats.0.waiter": ["red-monotoni"]},
    ),
    Case(
        "R-TURN-4-full-hand-draws-nothing",
        WAITERS,
        pass_(1),
        {"to_act": 0, "seats.1.hand.ingredients": ings(), "supply.0": "pineapple"},
        before={"seats.1.waiter": []},
    ),
    Case(
        "R-TURN-5-empty-waiter-leaves-the-supply",
        ORDERS_ONLY,
        pass_(0, "supply"),
        {"seats.0.waiter": [], "seats.0.hand.ingredients": ings(pineapple=1)},
    ),
    Case(
        "R-TURN-6-mamma-mia-card-laid-out-and-replaced",
        MAMMA_MIA_SECOND,
        play(0, "2 salami", draw="supply"),
        {
            "mamma_mia_holder": 0,
            "supply.0": "salami",
            "seats.0.hand.ingredients": ings(salami=1, pineapple=1, pepper=1, olive=3),
        },
        before={"mamma_mia_holder": None},
    ),
    Case(
        "R-TURN-7-mamma-mia-as-last-card-ends-the-round",
        DRAINED,
        play(0, "1 salami", draw="supply"),
        {
            "phase": "resolve",
            "supply": [],
            "mamma_mia_holder": 0,
            "seats.0.hand.ingredients": ings(pineapple=2, mushroom=2, pepper=2),
        },
        before={"supply": ["mamma-mia"], "to_act": 0},
    ),
    Case(
        "R-TURN-7-last-ingredient-card-ends-the-round",
        DRAINED_EARLY,
        play(1, "7 salami", draw="supply"),
        {
            "phase": "resolve",
            "supply": [],
            "mamma_mia_holder": 0,
            "seats.1.hand.ingredients": ings(pineapple=6, olive=1),
        },
        before={"mamma_mia_holder": 0},
    ),
    Case(
        "R-TURN-8-one-pass-is-no-stalemate",
        SEVEN_ORDERS,
        pass_(0),
        {"round": 1, "phase": "turn", "to_act": 1},
    ),
    Case(
        "R-TURN-8-stalemate-ends-the-round",
        then(SEVEN_ORDERS, pass_(0)),
        pass_(1),
        {
            "round": 2,
            "phase": "turn",
            "to_act": 0,
            "mamma_mia_holder": None,
            "oven": cards("6 salami, 6 olive"),
            "seats.0.waiter": ["red-pineapple"],
            "seats.1.waiter": ["yellow-salami"],
        },
    ),
]

REFUSALS = [
    Refusal("R-TURN-1-must-play-while-holding-ingredients", OPEN, pass_(0, "supply"), "R-TURN-1"),
    Refusal(
        "R-TURN-1-count-zero",
        OPEN,
        {"seat": 0, "play": {"ingredient": "salami", "count": 0}, "draw": "supply"},
        "R-TURN-1",
    ),
    Refusal("R-TURN-1-more-than-held", OPEN, play(0, "3 salami", draw="supply"), "R-TURN-1"),
    Refusal("R-TURN-1-kind-not-held", WAITERS, play(1, "1 salami"), "R-TURN-1"),
    Refusal("R-TURN-1-wrong-seat", OPEN, play(1, "1 mushroom", draw="supply"), "R-TURN-1"),
    Refusal(
        "R-TURN-2-order-not-in-hand", OPEN, play(0, "1 salami", "red-olive", "supply"), "R-TURN-2"
    ),
    Refusal(
        "R-TURN-3-pass-plays-no-order",
        WAITERS,
        {"seat": 1, "pass": True, "order": "yellow-mushroom"},
        "R-TURN-3",
    ),
    Refusal("R-TURN-4-below-seven-must-draw", ORDERS_ONLY, pass_(0), "R-TURN-4"),
    Refusal("R-TURN-4-play-then-must-draw", OPEN, play(0, "1 salami"), "R-TURN-4"),
    Refusal("R-TURN-4-full-hand-cannot-draw", WAITERS, pass_(1, "supply"), "R-TURN-4"),
    Refusal(
        "R-TURN-5-empty-waiter-while-supply-has-cards", ORDERS_ONLY, pass_(0, "waiter"), "R-TURN-5"
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_turn(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda r: r.id)
def test_illegal_turn(refusal: Refusal) -> None:
    check_refusal(refusal)
