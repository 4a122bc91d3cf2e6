"""The ``greedy`` bot: plays an order as soon as the oven seems to hold its ingredients.

Each turn it counts the ingredient cards on the oven (every one played this round
and the leftovers carried over, R-NEXT-1) and plays an order from its hand whose
recipe those cards already cover, on top of one card of the kind it holds most.
It does not account for what earlier orders in the oven will consume, nor for what
its opponents hold, which is what ``counter`` adds. It refills from its waiter when
it holds no order, else from the supply, and bakes whenever it can.
"""

from __future__ import annotations

from client_sdk import INGREDIENTS, ORDERS, SUPPLY, WAITER, Bot, Turn, View


class GreedyBot(Bot):
    """Plays an order when the raw ingredient count of the oven covers its recipe."""

    name = "greedy"

    def turn(self, view: View) -> Turn:
        """Returns one card of the most-held kind, with an order the oven seems to hold."""
        oven = [view.oven.count(kind) for kind in INGREDIENTS]
        ready = [o for o in view.hand_orders if _covered(o, oven)]
        holds_order = bool(view.hand_orders) and len(ready) < len(view.hand_orders)
        draw = WAITER if view.waiter and not holds_order else SUPPLY
        if not any(view.hand):
            kind = None
        else:
            kind = INGREDIENTS[max(range(5), key=lambda k: view.hand[k])]
        order = ready[0] if ready and kind is not None else None
        return _pick(view, kind, order, draw)


def _covered(order_id: str, oven: list[int]) -> bool:
    """Returns whether ingredient counts ``oven`` hold the order's recipe (R-RES-4..7)."""
    order = ORDERS[order_id]
    p = order.personal
    if order.kind == "bombastica":
        return sum(oven) >= 15
    if order.kind == "minimale":
        return oven[p] >= 1 and any(n >= 3 for k, n in enumerate(oven) if k != p)
    if order.kind == "monotoni":
        return oven[p] >= 1 and any(n >= 6 for k, n in enumerate(oven) if k != p)
    return all(have >= need for have, need in zip(oven, order.need, strict=True))


def _pick(view: View, kind: str | None, order: str | None, draw: str) -> Turn:
    """Returns the legal turn closest to playing one ``kind`` and ``order``, drawing ``draw``."""
    wanted = [
        a
        for a in view.legal
        if isinstance(a, Turn) and a.ingredient == kind and a.count <= 1 and a.order == order
    ]
    for action in wanted:
        if action.draw in (draw, None):
            return action
    if wanted:
        return wanted[0]
    first = view.legal[0]
    assert isinstance(first, Turn)
    return first
