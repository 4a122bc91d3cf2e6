"""Scenario tables for resolving the oven (docs/rules.md section 4, R-RES-*).

The scenes (``early``, ``late`` in rules_support) reach the resolution of round 1 in
two-player games; each case names the decision taken and the state it leads to.
"""

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
    early,
    ings,
    late,
    pass_,
    play,
    then,
)

RED_LAST = play(0, "2 pineapple", draw="supply")
# Red is asked whether to add the salami red-mushroom misses (table: 6 mushroom).
RED_ASKED = then(early("red-mushroom", "yellow-pepper"), RED_LAST)
BAKE_WITH_SALAMI = bake(0, hand="salami")
ASK_RED = {"seat": 0, "resolve": {"bake": True, "hand": {"salami": 1}}}
DECLINE_RED = {"seat": 0, "resolve": {"bake": False}}
YELLOW_ADDS = bake(1, hand="pineapple")

CASES = [
    Case(
        "R-RES-1-orders-meet-only-the-cards-played-before",
        early("red-mushroom", "yellow-pepper"),
        play(0, "1 salami", draw="supply"),
        # Eight salami reach the table later, too late for red-mushroom.
        {
            "deciding": "yellow-pepper",
            "seats.0.delivered": [],
            "seats.0.waiter.7": "red-mushroom",
            "table": ings(mushroom=6, pepper=6),
        },
    ),
    Case(
        "R-RES-2-revealed-ingredients-join-the-table",
        early("red-mushroom", "yellow-pepper"),
        RED_LAST,
        {
            "table": ings(mushroom=6),
            "deciding": "red-mushroom",
            "oven": cards("6 pepper, yellow-pepper, 7 olive, 7 salami, 2 pineapple"),
        },
    ),
    Case(
        "R-RES-3-used-cards-leave-the-table",
        RED_ASKED,
        BAKE_WITH_SALAMI,
        {"table": ings(mushroom=2, pepper=6), "used": 5, "deciding": "yellow-pepper"},
    ),
    Case(
        "R-RES-3-later-order-misses-the-used-cards",
        late("red-pepper"),
        YELLOW_ADDS,
        {
            "deciding": "red-pepper",
            "table": ings(salami=6, mushroom=6, pepper=2),
            "legal": [{"seat": 0, "resolve": {"bake": True, "hand": {"pepper": 2}}}, DECLINE_RED],
        },
    ),
    Case(
        "R-RES-4-owner-asked-to-add-the-missing-card",
        early("red-mushroom", "yellow-pepper"),
        RED_LAST,
        {"phase": "resolve", "to_act": 0, "legal": [ASK_RED, DECLINE_RED]},
    ),
    Case(
        "R-RES-4-bake-adding-the-missing-card-from-hand",
        RED_ASKED,
        BAKE_WITH_SALAMI,
        {
            "seats.0.delivered": ["red-mushroom"],
            "seats.0.hand.ingredients": ings(mushroom=2, pepper=2),
            "to_act": 1,
        },
    ),
    Case(
        "R-RES-4-declined-order-fails",
        RED_ASKED,
        decline(0),
        {
            "seats.0.delivered": [],
            "table": ings(mushroom=6, pepper=6),
            "used": 0,
            "seats.0.hand.ingredients": ings(salami=1, mushroom=2, pepper=2),
        },
    ),
    Case(
        "R-RES-5-table-of-15-or-more-bakes-with-all-of-it",
        late("red-bombastica"),
        decline(1),
        # 18 cards on the table go with red-bombastica; 7 olive, 2 salami are left.
        {
            "seats.0.delivered": ["red-bombastica"],
            "round": 2,
            "oven": cards("2 salami, 7 olive"),
            "supply#": 19,
        },
    ),
    Case(
        "R-RES-5-owner-adds-cards-to-reach-exactly-15",
        late("red-bombastica"),
        YELLOW_ADDS,
        {
            "deciding": "red-bombastica",
            "table": ings(salami=6, mushroom=6, pepper=2),
            "legal": [
                {"seat": 0, "resolve": {"bake": True, "hand": {k: 1}}}
                for k in ("pineapple", "mushroom", "pepper", "olive")
            ]
            + [DECLINE_RED],
        },
    ),
    Case(
        "R-RES-5-bombastica-with-a-card-from-hand",
        then(late("red-bombastica"), YELLOW_ADDS),
        bake(0, hand="olive"),
        {
            "seats.0.delivered": ["red-bombastica"],
            "round": 2,
            "supply#": 21,
            "seats.0.hand.ingredients": ings(pineapple=1, mushroom=2, pepper=2),
            "oven": cards("2 salami, 7 olive"),
        },
    ),
    Case(
        "R-RES-6-tied-lowest-kinds-owner-chooses",
        late("red-minimale"),
        decline(1),
        {
            "deciding": "red-minimale",
            "table": ings(salami=6, mushroom=6, pepper=6),
            "legal": [
                {"seat": 0, "resolve": {"bake": True, "ingredient": "mushroom"}},
                {"seat": 0, "resolve": {"bake": True, "ingredient": "pepper"}},
                DECLINE_RED,
            ],
        },
    ),
    Case(
        "R-RES-6-minimale-baked-with-the-chosen-kind",
        then(late("red-minimale"), decline(1)),
        bake(0, ingredient="pepper"),
        {
            "seats.0.delivered": ["red-minimale"],
            "round": 2,
            "oven": cards("7 salami, 6 mushroom, 3 pepper, 7 olive"),
        },
    ),
    Case(
        "R-RES-6-lowest-non-zero-kind-missing-card-from-hand",
        late("red-minimale"),
        YELLOW_ADDS,
        {
            "deciding": "red-minimale",
            "legal": [{"seat": 0, "resolve": {"bake": True, "hand": {"pepper": 1}}}, DECLINE_RED],
        },
    ),
    Case(
        "R-RES-6-no-other-kind-on-the-table-fails",
        early(
            "red-minimale",
            "yellow-pepper",
            red="salami",
            refills="olive, mushroom",
            last="2 salami, 2 pepper, mushroom, 2 pineapple",
        ),
        RED_LAST,
        {"deciding": "yellow-pepper", "seats.0.waiter.7": "red-minimale"},
    ),
    Case(
        "R-RES-7-owner-chooses-the-monotoni-kind",
        late("red-monotoni"),
        decline(1),
        {
            "deciding": "red-monotoni",
            "legal": [
                {"seat": 0, "resolve": {"bake": True, "ingredient": "mushroom"}},
                {"seat": 0, "resolve": {"bake": True, "ingredient": "pepper"}},
                DECLINE_RED,
            ],
        },
    ),
    Case(
        "R-RES-7-monotoni-baked-with-the-chosen-kind",
        then(late("red-monotoni"), decline(1)),
        bake(0, ingredient="mushroom"),
        {"seats.0.delivered": ["red-monotoni"], "oven": cards("7 salami, 6 pepper, 7 olive")},
    ),
    Case(
        "R-RES-7-personal-ingredient-from-hand",
        early("red-monotoni", "yellow-pepper"),
        RED_LAST,
        {
            "deciding": "red-monotoni",
            "legal": [
                {
                    "seat": 0,
                    "resolve": {"bake": True, "ingredient": "mushroom", "hand": {"salami": 1}},
                },
                DECLINE_RED,
            ],
        },
    ),
    Case(
        "R-RES-8-table-completes-order-baked-without-asking",
        late("red-mushroom"),
        decline(1),
        {"seats.0.delivered": ["red-mushroom"], "round": 2, "phase": "turn"},
    ),
    Case(
        "R-RES-8-cannot-bake-fails-without-asking",
        early("red-mushroom", "yellow-pepper"),
        play(0, "1 salami", draw="supply"),
        {"to_act": 1, "seats.0.waiter.7": "red-mushroom"},
    ),
    Case(
        "R-RES-8-decline-is-always-offered",
        RED_ASKED,
        BAKE_WITH_SALAMI,
        {
            "legal": [
                {"seat": 1, "resolve": {"bake": True, "hand": {"pineapple": 1}}},
                {"seat": 1, "resolve": {"bake": False}},
            ]
        },
    ),
    Case(
        "R-RES-9-baked-order-goes-to-delivered",
        then(RED_ASKED, BAKE_WITH_SALAMI),
        YELLOW_ADDS,
        {"seats.1.delivered": ["yellow-pepper"], "seats.1.waiter#": 7},
    ),
    Case(
        "R-RES-9-failed-order-goes-to-the-waiter-bottom",
        RED_ASKED,
        decline(0),
        {
            "seats.0.waiter": [
                "red-pineapple",
                "red-pepper",
                "red-olive",
                "red-mixed",
                "red-bombastica",
                "red-minimale",
                "red-monotoni",
                "red-mushroom",
            ]
        },
    ),
    Case(
        "R-RES-10-leftovers-stay-after-the-last-card",
        then(RED_ASKED, BAKE_WITH_SALAMI),
        YELLOW_ADDS,
        # Left: 2 mushroom, 2 pepper, 7 olive, 7 salami, 2 pineapple (R-NEXT-1 order).
        {"round": 2, "oven": cards("7 salami, 2 pineapple, 2 mushroom, 2 pepper, 7 olive")},
    ),
]

REFUSALS = [
    Refusal("R-RES-4-hand-must-add-what-is-missing", RED_ASKED, bake(0), "R-RES-4"),
    Refusal("R-RES-4-hand-cards-must-match", RED_ASKED, bake(0, hand="mushroom"), "R-RES-4"),
    Refusal("R-RES-4-no-kind-to-choose", RED_ASKED, bake(0, "salami", "salami"), "R-RES-4"),
    Refusal(
        "R-RES-5-hand-must-reach-exactly-15",
        then(late("red-bombastica"), YELLOW_ADDS),
        bake(0, hand="2 mushroom"),
        "R-RES-5",
    ),
    Refusal(
        "R-RES-5-cards-not-in-hand",
        then(late("red-bombastica"), YELLOW_ADDS),
        bake(0, hand="salami"),
        "R-RES-5",
    ),
    Refusal(
        "R-RES-6-kind-must-be-a-lowest-one",
        then(late("red-minimale"), decline(1)),
        bake(0, ingredient="olive"),
        "R-RES-6",
    ),
    Refusal(
        "R-RES-6-owner-must-name-the-kind",
        then(late("red-minimale"), decline(1)),
        bake(0),
        "R-RES-6",
    ),
    Refusal(
        "R-RES-7-never-the-personal-ingredient",
        then(late("red-monotoni"), decline(1)),
        bake(0, ingredient="salami"),
        "R-RES-7",
    ),
    Refusal(
        "R-RES-8-a-turn-during-resolution",
        RED_ASKED,
        play(0, "1 mushroom", draw="supply"),
        "R-RES-8",
    ),
    Refusal("R-RES-8-a-pass-during-resolution", RED_ASKED, pass_(0, "supply"), "R-RES-8"),
    Refusal("R-RES-8-only-the-owner-decides", RED_ASKED, decline(1), "R-RES-8"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_resolve(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda r: r.id)
def test_illegal_resolve(refusal: Refusal) -> None:
    check_refusal(refusal)
