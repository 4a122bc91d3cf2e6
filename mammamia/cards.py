"""The cards of Mamma Mia! (R-COMP-*): ingredients, colours, orders and their recipes.

Every card is identified by its stable id string (R-COMP-5): an ingredient is its
name, an order is ``<colour>-<x>`` and the Mamma Mia! card is ``mamma-mia``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

INGREDIENTS: Final = ("salami", "pineapple", "mushroom", "pepper", "olive")
"""The five ingredient kinds in canonical order (R-COMP-1)."""

COLOURS: Final = ("red", "yellow", "brown", "green", "purple")
"""The five colours in canonical order; colour *i*'s personal ingredient is INGREDIENTS[i]."""

MAMMA_MIA: Final = "mamma-mia"
"""The id of the Mamma Mia! card (R-COMP-4)."""

KIND_INDEX: Final[dict[str, int]] = {name: i for i, name in enumerate(INGREDIENTS)}
"""Index of each ingredient kind in the canonical order."""

COPIES_PER_KIND: Final = 13
REMOVED_PER_KIND: Final[dict[int, int]] = {2: 5, 3: 3, 4: 1, 5: 0}
"""How many cards of each kind leave the game before dealing (R-SETUP-2)."""

MIN_PLAYERS: Final = 2
MAX_PLAYERS: Final = 5
HAND_LIMIT: Final = 7
DEALT_INGREDIENTS: Final = 6
BOMBASTICA_SIZE: Final = 15

STANDARD: Final = "standard"
BOMBASTICA: Final = "bombastica"
MINIMALE: Final = "minimale"
MONOTONI: Final = "monotoni"


@dataclass(frozen=True, slots=True)
class Order:
    """An order card: its id, colour, owner's personal ingredient and recipe.

    ``need`` is the recipe of a standard order as counts per kind in canonical
    order; it is all zeros for the three specials, whose needs depend on the table.
    """

    id: str
    colour: str
    kind: str
    personal: int
    need: tuple[int, int, int, int, int]


def _orders_of(colour: str) -> tuple[Order, ...]:
    """Returns the eight orders of one colour (R-COMP-3) in canonical order."""
    personal = COLOURS.index(colour)
    orders = []
    for x, name in enumerate(INGREDIENTS):
        if x == personal:
            continue
        need = [0] * 5
        need[personal] = 1
        need[x] = 4
        orders.append(Order(f"{colour}-{name}", colour, STANDARD, personal, _five(need)))
    orders.append(Order(f"{colour}-mixed", colour, STANDARD, personal, (1, 1, 1, 1, 1)))
    for special in (BOMBASTICA, MINIMALE, MONOTONI):
        orders.append(Order(f"{colour}-{special}", colour, special, personal, (0, 0, 0, 0, 0)))
    return tuple(orders)


def _five(values: list[int]) -> tuple[int, int, int, int, int]:
    a, b, c, d, e = values
    return (a, b, c, d, e)


ORDERS_BY_COLOUR: Final[dict[str, tuple[Order, ...]]] = {c: _orders_of(c) for c in COLOURS}
"""Each colour's eight orders, in canonical order."""

ORDERS: Final[dict[str, Order]] = {o.id: o for os in ORDERS_BY_COLOUR.values() for o in os}
"""Every order card by id."""


_DECKS: Final[dict[int, tuple[str, ...]]] = {
    n: tuple(name for name in INGREDIENTS for _ in range(COPIES_PER_KIND - removed))
    for n, removed in REMOVED_PER_KIND.items()
}


def ingredient_deck(players: int) -> list[str]:
    """Returns the ingredient cards in play for a player count (R-SETUP-2), sorted by kind."""
    return list(_DECKS[players])


def is_ingredient(card: str) -> bool:
    """Returns whether a card id names an ingredient card."""
    return card in KIND_INDEX
