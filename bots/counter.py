"""The ``counter`` bot: keeps full account of the public cards and times its orders.

What it counts, all from its view (R-VIEW-1/2):

- the oven, card by card in the order played (the last round's leftovers first);
- what the orders already in the oven will consume when it is resolved: it plays
  the resolution forward (R-RES-1..7), taking an opponent's order to bake when the
  table makes it or is one card short and that opponent holds an ingredient card
  (R-TURN-9), and its own orders to bake when the table and its hand make them;
- what each opponent may hold: of its colour's orders, those neither delivered
  nor in the oven, each in hand with the chance its public count of orders in
  hand gives, and so which kinds its orders want.

Each turn it scores every legal turn by playing the resolution forward with the
cards that turn adds: ten points per pizza of its own. So an order goes in as
soon as the cards before it, after everything earlier orders will eat, plus cards
it keeps in hand for the resolution, make it; and cards it needs to keep for an
order already in the oven are never played. Other cards cost a little: kinds its
own orders want, kinds its opponents' orders want, and every card played (a
smaller hand draws more and ends the round sooner). It refills from its waiter
while it holds fewer than two orders. At resolution it compares every option and
declining by its pizzas over the rest of the oven, opponents assumed to bake
whenever their hands could, a certain pizza now counting more than a later one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from client_sdk import (
    INGREDIENTS,
    ORDERS,
    SUPPLY,
    WAITER,
    Bot,
    Resolve,
    Turn,
    View,
    fewest_cards_bake,
)

_BOMBASTICA = 15


@dataclass(frozen=True, slots=True)
class _Owners:
    """Who owns which colour and what each seat could add from hand at resolution:
    ``ingredients`` per seat, and ``cover``, the most cards an opponent is taken to add."""

    me: int
    seat_of: dict[str, int]
    ingredients: tuple[int, ...]
    cover: int


class CounterBot(Bot):
    """Plays the resolution forward for every legal turn and keeps the best."""

    name = "counter"

    # How many orders it wants in hand after a turn before it refills from the supply.
    wanted_orders = 2
    # An opponent's order missing at most this many cards is taken to bake from hand
    # (it holds that many ingredients; it holds the right kinds far less often).
    opponent_cover = 1
    # What a card played onto the oven costs per order of an opponent that may want it.
    opponent_weight = 0.3

    def turn(self, view: View) -> Turn:
        """Returns the legal turn that the forward resolution scores best."""
        assert view.seat is not None
        owners = _owners(view, self.opponent_cover)
        needs = _needs(view.hand_orders)
        wanted = _opponents_want(view)
        cost = [self.opponent_weight * w + 0.3 * n for w, n in zip(wanted, needs, strict=True)]
        best: Turn | None = None
        best_score = float("-inf")
        for action in view.legal:
            assert isinstance(action, Turn)
            score = self._score(view, action, owners, cost)
            if score > best_score:
                best, best_score = action, score
        assert best is not None
        return best

    def _score(self, view: View, action: Turn, owners: _Owners, cost: list[float]) -> float:
        """Returns how good ``action`` looks: 10 per own pizza the oven will bake,
        minus what the cards it plays are worth to its orders and its opponents'."""
        hand = list(view.hand)
        cards: list[str] = []
        if action.ingredient is not None:
            k = KIND[action.ingredient]
            hand[k] -= action.count
            cards.extend([action.ingredient] * action.count)
        if action.order is not None:
            cards.append(action.order)
        bakes, _, left = _resolve_forward(
            (*view.oven, *cards), (0, 0, 0, 0, 0), _five(hand), owners
        )
        score = 10.0 * bakes
        # Cards spent from hand at resolution only cost the tie-break.
        score -= 0.01 * (sum(hand) - sum(left))
        if action.ingredient is not None:
            k = KIND[action.ingredient]
            # Keep the kinds its own orders need, feed its opponents' orders little,
            # and play few cards to keep the hand.
            score -= (cost[k] + 0.15) * action.count
        orders_left = len(view.hand_orders) - (action.order is not None)
        if action.draw == WAITER:
            score += 0.5 if orders_left < self.wanted_orders else -0.5
        elif action.draw == SUPPLY and orders_left < self.wanted_orders and view.waiter:
            score -= 0.5
        return score

    def resolve(self, view: View) -> Resolve:
        """Returns the option (or the decline) that leads to the most of its pizzas.

        The pizza baked now is certain and the later ones are not, so later pizzas
        count a little less, and opponents are taken to bake whenever their hands
        could: a pizza is given up now only for two later ones, or one surer one.
        """
        assert view.seat is not None and view.deciding is not None
        owners = _owners(view, cover=_BOMBASTICA)
        rest = view.oven[view.revealed :]
        best = fewest_cards_bake(view)
        best_score = float("-inf")
        for option in view.legal:
            assert isinstance(option, Resolve)
            table, hand, baked = _apply_option(view, option)
            bakes, _, left = _resolve_forward(rest, table, hand, owners)
            score = 10.0 * baked + 9.0 * bakes - 0.01 * (sum(view.hand) - sum(left))
            if score > best_score:
                best, best_score = option, score
        return best


KIND = {name: k for k, name in enumerate(INGREDIENTS)}


def _five(values: Sequence[int]) -> tuple[int, int, int, int, int]:
    a, b, c, d, e = values
    return (a, b, c, d, e)


def _owners(view: View, cover: int) -> _Owners:
    """Returns the owners' facts the forward resolution needs, from the public seats."""
    assert view.seat is not None
    seat_of = {info.colour: info.seat for info in view.seats}
    return _Owners(
        view.seat, seat_of, tuple(info.ingredients_in_hand for info in view.seats), cover
    )


def _needs(orders: Sequence[str]) -> list[float]:
    """Returns, per kind, how much the orders in hand want it (standard recipes)."""
    needs = [0.0] * 5
    for order_id in orders:
        order = ORDERS[order_id]
        needs[order.personal] += 1.0
        if order.kind == "standard":
            for k, n in enumerate(order.need):
                if n > 1:
                    needs[k] += 1.0
    return needs


def _opponents_want(view: View) -> list[float]:
    """Returns, per kind, how many cards the opponents' orders in hand may want.

    An opponent's hand holds ``orders_in_hand`` of its colour's orders that are
    neither delivered nor in the oven (its failed ones may be back in its waiter):
    each of those is taken to be in hand with the same chance.
    """
    in_oven = {card for card in view.oven if card in ORDERS}
    wanted = [0.0] * 5
    for info in view.seats:
        if info.seat == view.seat or not info.orders_in_hand:
            continue
        possible = [
            o
            for o in ORDERS.values()
            if o.colour == info.colour and o.id not in info.delivered and o.id not in in_oven
        ]
        if not possible:
            continue
        chance = min(1.0, info.orders_in_hand / len(possible))
        for order in possible:
            wanted[order.personal] += chance
            if order.kind == "standard":
                for k, n in enumerate(order.need):
                    if k != order.personal:
                        wanted[k] += chance * n / 4
    return wanted


def _apply_option(view: View, option: Resolve) -> tuple[list[int], list[int], int]:
    """Returns (table, hand, pizzas) after taking ``option`` for ``view.deciding``."""
    table = list(view.table)
    hand = list(view.hand)
    if not option.bake:
        return table, hand, 0
    order = ORDERS[view.deciding or ""]
    added = option.hand or (0, 0, 0, 0, 0)
    for k in range(5):
        hand[k] -= added[k]
    if order.kind == "bombastica":
        return [0, 0, 0, 0, 0], hand, 1
    if order.kind == "standard":
        need = list(order.need)
    else:
        p = order.personal
        k = KIND[option.ingredient] if option.ingredient else _minimale_kind(table, p)
        need = [0, 0, 0, 0, 0]
        need[p] = 1
        need[k] = 3 if order.kind == "minimale" else 6
    for k in range(5):
        table[k] -= need[k] - added[k]
    return table, hand, 1


def _minimale_kind(table: Sequence[int], personal: int) -> int:
    """Returns the first kind a Minimale's "?" may be (R-RES-6), or -1 if none."""
    present = [t for k, t in enumerate(table) if k != personal and t]
    if not present:
        return -1
    low = min(present)
    return next(k for k, t in enumerate(table) if k != personal and t == low)


def _resolve_forward(
    cards: Sequence[str], table0: Sequence[int], hand0: Sequence[int], owners: _Owners
) -> tuple[int, list[int], list[int]]:
    """Returns (own pizzas, table after, own hand after) once ``cards`` are revealed.

    Own orders bake whenever table and hand make them; an opponent's order is taken
    to bake whenever the table and the count of ingredients it holds could make it.
    """
    table = list(table0)
    hand = list(hand0)
    spare = list(owners.ingredients)
    bakes = 0
    me = owners.me
    for card in cards:
        k = KIND.get(card)
        if k is not None:
            table[k] += 1
            continue
        order = ORDERS[card]
        seat = owners.seat_of[order.colour]
        mine = seat == me
        p = order.personal
        if order.kind == "bombastica":
            short = _BOMBASTICA - sum(table)
            if short <= 0:
                table = [0, 0, 0, 0, 0]
                bakes += mine
            elif mine and sum(hand) >= short:
                _spend_any(hand, short)
                table = [0, 0, 0, 0, 0]
                bakes += 1
            elif not mine and spare[seat] >= short and short <= owners.cover:
                spare[seat] -= short
                table = [0, 0, 0, 0, 0]
            continue
        if order.kind == "standard":
            need = order.need
        else:
            size = 3 if order.kind == "minimale" else 6
            if order.kind == "minimale":
                x = _minimale_kind(table, p)
                if x < 0:
                    continue
            else:
                x = max(
                    (j for j in range(5) if j != p),
                    key=lambda j: table[j] + (hand[j] if mine else 0),
                )
            need_list = [0, 0, 0, 0, 0]
            need_list[p] = 1
            need_list[x] = size
            need = _five(need_list)
        missing = [max(0, n - t) for n, t in zip(need, table, strict=True)]
        short = sum(missing)
        if mine:
            if any(m > h for m, h in zip(missing, hand, strict=True)):
                continue
            for j in range(5):
                hand[j] -= missing[j]
            bakes += 1
        elif short:
            if spare[seat] < short or short > owners.cover:
                continue
            spare[seat] -= short
        for j in range(5):
            table[j] -= need[j] - missing[j]
    return bakes, table, hand


def _spend_any(hand: list[int], n: int) -> None:
    """Removes ``n`` cards from ``hand``, the most plentiful kinds first."""
    while n:
        k = max(range(5), key=lambda j: hand[j])
        take = min(n, hand[k])
        hand[k] -= take
        n -= take


__all__ = ["CounterBot"]
