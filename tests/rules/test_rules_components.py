"""The cards of the game (docs/rules.md section 1, R-COMP-*)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from rules_support import dump

from mammamia import COLOURS, INGREDIENTS, MAMMA_MIA, ORDERS, new_game
from mammamia.cards import ORDERS_BY_COLOUR, ingredient_deck


def ingredients() -> bool:
    deck = ingredient_deck(5)
    return (
        INGREDIENTS == ("salami", "pineapple", "mushroom", "pepper", "olive")
        and len(deck) == 65
        and Counter(deck) == dict.fromkeys(INGREDIENTS, 13)
    )


def colours() -> bool:
    personal = {c: {INGREDIENTS[o.personal] for o in ORDERS_BY_COLOUR[c]} for c in COLOURS}
    return (
        COLOURS == ("red", "yellow", "brown", "green", "purple")
        and len(ORDERS) == 40
        and personal
        == {
            "red": {"salami"},
            "yellow": {"pineapple"},
            "brown": {"mushroom"},
            "green": {"pepper"},
            "purple": {"olive"},
        }
    )


def eight_orders() -> bool:
    for colour in COLOURS:
        orders = ORDERS_BY_COLOUR[colour]
        kinds = Counter(o.kind for o in orders)
        if kinds != {"standard": 5, "bombastica": 1, "minimale": 1, "monotoni": 1}:
            return False
        standard = [o.need for o in orders if o.kind == "standard"]
        p = COLOURS.index(colour)
        fours = sorted(tuple(n) for n in standard if max(n) == 4)
        want = sorted(
            tuple(4 if k == x else 1 if k == p else 0 for k in range(5)) for x in range(5) if x != p
        )
        if fours != want or (1, 1, 1, 1, 1) not in standard:
            return False
        if [sum(col) for col in zip(*standard, strict=True)] != [5] * 5:
            return False
    return True


def one_mamma_mia() -> bool:
    d = dump(new_game(4, seed=3))
    held = [c for s in d["seats"] for c in s["hand"]["orders"]]
    return d["supply"].count(MAMMA_MIA) == 1 and MAMMA_MIA not in held


def card_ids() -> bool:
    green = {o.id: o for o in ORDERS_BY_COLOUR["green"]}
    return (
        set(green)
        == {
            "green-salami",
            "green-pineapple",
            "green-mushroom",
            "green-olive",
            "green-mixed",
            "green-bombastica",
            "green-minimale",
            "green-monotoni",
        }
        and green["green-salami"].need == (4, 0, 0, 1, 0)
        and MAMMA_MIA == "mamma-mia"
        and set(ingredient_deck(2)) == set(INGREDIENTS)
    )


CASES: list[tuple[str, Callable[[], bool]]] = [
    ("R-COMP-1-65-ingredients-13-of-each-kind-in-canonical-order", ingredients),
    ("R-COMP-2-40-orders-8-per-colour-with-its-personal-ingredient", colours),
    ("R-COMP-3-5-standard-orders-and-3-specials-per-colour", eight_orders),
    ("R-COMP-4-one-mamma-mia-card-in-the-supply", one_mamma_mia),
    ("R-COMP-5-stable-card-ids", card_ids),
]


@pytest.mark.parametrize("holds", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_components(holds: Callable[[], bool]) -> None:
    assert holds()
