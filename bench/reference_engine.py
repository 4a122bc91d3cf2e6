"""A plain reference implementation of the Mamma Mia! rules, the engine benchmark's baseline.

This is the engine as one would first write it from ``docs/rules.md``: the game is a
handful of dicts and lists, an action is a dict in the record's own form
(``{"play": {"ingredient": "olive", "count": 2}, "order": "red-mixed", "draw": "supply"}``,
``{"pass": True, "draw": "waiter"}``, ``{"resolve": {"bake": True, "hand": {"olive": 1}}}``),
and legal actions are enumerated afresh whenever they are asked for. Nothing is
cached, interned or packed, and nothing is made slow on purpose. It shares no code
with ``mammamia``, so that the benchmark compares two independent implementations
and ``tests/bench/test_reference_engine.py`` can check one against the other.

    >>> game = ReferenceGame(4, seed=1)
    >>> while not game.is_over():
    ...     game.apply(game.legal_actions()[0])
"""

from __future__ import annotations

import random
from typing import Any

KINDS = ["salami", "pineapple", "mushroom", "pepper", "olive"]  # R-COMP-1
COLOURS = ["red", "yellow", "brown", "green", "purple"]  # R-COMP-2
PERSONAL = dict(zip(COLOURS, KINDS, strict=True))
MAMMA_MIA = "mamma-mia"  # R-COMP-4
REMOVED = {2: 5, 3: 3, 4: 1, 5: 0}  # R-SETUP-2
HAND_LIMIT = 7
ROUNDS = 3


def make_orders() -> dict[str, dict[str, Any]]:
    """Returns every order card by id (R-COMP-3, R-COMP-5): its colour, owner's personal
    ingredient, kind (standard or one of the specials) and, if standard, its recipe."""
    orders = {}
    for colour in COLOURS:
        p = PERSONAL[colour]
        for x in KINDS:
            if x != p:
                orders[f"{colour}-{x}"] = {
                    "colour": colour,
                    "personal": p,
                    "kind": "standard",
                    "recipe": {p: 1, x: 4},
                }
        orders[f"{colour}-mixed"] = {
            "colour": colour,
            "personal": p,
            "kind": "standard",
            "recipe": {k: 1 for k in KINDS},
        }
        for special in ("bombastica", "minimale", "monotoni"):
            orders[f"{colour}-{special}"] = {
                "colour": colour,
                "personal": p,
                "kind": special,
                "recipe": {},
            }
    return orders


ORDERS = make_orders()


class ReferenceGame:
    """One game: ``players`` dicts (hand, orders, waiter, delivered) and the shared piles.

    ``deal`` (hands, supply top first, waiters top first) and ``reshuffles`` (the new
    supplies of rounds 2 and 3, top first) stack the cards instead of shuffling them,
    which is how a game of another engine is replayed here.
    """

    def __init__(
        self,
        players: int,
        seed: int = 0,
        colours: list[str] | None = None,
        first_player: int | None = None,
        deal: dict[str, Any] | None = None,
        reshuffles: list[list[str]] | None = None,
    ) -> None:
        if players not in REMOVED:
            raise ValueError(f"players must be 2 to 5, got {players!r} (R-SETUP-1)")
        self.rng = random.Random(seed)
        colours = colours or COLOURS[:players]
        if deal is None:
            # R-SETUP-2..5: the deck, six cards each, Mamma Mia! into the rest, waiters.
            deck = [k for k in KINDS for _ in range(13 - REMOVED[players])]
            self.rng.shuffle(deck)
            hands = [deck[6 * i : 6 * i + 6] for i in range(players)]
            supply = [*deck[6 * players :], MAMMA_MIA]
            self.rng.shuffle(supply)
            waiters = []
            for colour in colours:
                waiter = [o for o in ORDERS if ORDERS[o]["colour"] == colour]
                self.rng.shuffle(waiter)
                waiters.append(waiter)
        else:
            hands = deal["hands"]
            supply = list(deal["supply"])
            waiters = [list(w) for w in deal["waiters"]]
        self.players: list[dict[str, Any]] = []
        for i, colour in enumerate(colours):
            hand = {k: 0 for k in KINDS}
            for card in hands[i]:
                hand[card] += 1
            self.players.append(
                {
                    "colour": colour,
                    "hand": hand,
                    "orders": [waiters[i].pop(0)],
                    "waiter": waiters[i],
                    "delivered": [],
                }
            )
        self.supply = supply  # top first
        self.reshuffles = reshuffles
        self.oven: list[str] = []  # first played first
        self.table = {k: 0 for k in KINDS}
        self.used: list[str] = []
        self.holder: int | None = None
        self.round = 1
        self.phase = "turn"
        if first_player is None:
            first_player = self.rng.randrange(players)  # R-SETUP-6
        self.to_act: int | None = first_player
        self.last_actor = first_player
        self.passes = 0  # passes in a row that drew nothing (R-TURN-8)
        self.revealed = 0
        self.deciding: str | None = None
        self.options: list[dict[str, Any]] = []

    # -- queries ----------------------------------------------------------------------

    def is_over(self) -> bool:
        """Returns whether the third resolution has ended the game (R-END-1)."""
        return self.phase == "over"

    def owner(self, order: str) -> int:
        """Returns the seat that owns an order card."""
        colour = ORDERS[order]["colour"]
        seat: int
        for seat, player in enumerate(self.players):
            if player["colour"] == colour:
                return seat
        raise ValueError(f"no seat plays {colour}")

    def hand_size(self, seat: int) -> int:
        """Returns how many cards a seat holds, ingredients and orders."""
        player = self.players[seat]
        hand: dict[str, int] = player["hand"]
        return sum(hand.values()) + len(player["orders"])

    def legal_actions(self) -> list[dict[str, Any]]:
        """Returns every action the seat to act may take now (none once the game is over)."""
        if self.phase == "resolve":
            return self.options
        if self.phase == "over":
            return []
        assert self.to_act is not None
        player = self.players[self.to_act]
        size = self.hand_size(self.to_act)
        sources = ["supply"] + (["waiter"] if player["waiter"] else [])  # R-TURN-5
        actions = []
        if sum(player["hand"].values()) == 0:
            # R-TURN-3: pass; R-TURN-4: refill unless the hand holds 7 orders.
            if size >= HAND_LIMIT:
                return [{"pass": True}]
            return [{"pass": True, "draw": source} for source in sources]
        # R-TURN-1: one kind, any count; R-TURN-2: maybe one order; R-TURN-4: the hand
        # is then below 7 and refills from one source.
        for kind in KINDS:
            for count in range(1, player["hand"][kind] + 1):
                for order in [None, *player["orders"]]:
                    for source in sources:
                        action: dict[str, Any] = {"play": {"ingredient": kind, "count": count}}
                        if order is not None:
                            action["order"] = order
                        action["draw"] = source
                        actions.append(action)
        return actions

    def scores(self) -> list[tuple[int, int]]:
        """Returns each seat's (pizzas delivered, ingredient cards in hand) (R-END-2)."""
        return [(len(p["delivered"]), sum(p["hand"].values())) for p in self.players]

    def winners(self) -> list[int]:
        """Returns the seats with the best score once the game is over (R-END-2)."""
        if not self.is_over():
            return []
        scores = self.scores()
        best = max(scores)
        return [seat for seat, score in enumerate(scores) if score == best]

    # -- a turn -----------------------------------------------------------------------

    def apply(self, action: dict[str, Any]) -> None:
        """Applies an action of the seat to act; raises ValueError when it is not legal."""
        if self.phase == "over":
            raise ValueError("the game is over (R-END-1)")
        if self.phase == "resolve":
            if action not in self.options:
                raise ValueError(f"{action} does not resolve {self.deciding} (R-RES-8)")
            self.resolve(action["resolve"])
            return
        self.check_turn(action)
        self.play_turn(action)

    def check_turn(self, action: dict[str, Any]) -> None:
        """Raises ValueError, citing the rule, unless ``action`` is a legal turn now."""
        assert self.to_act is not None
        player = self.players[self.to_act]
        size = self.hand_size(self.to_act)
        if "play" in action:
            kind = action["play"]["ingredient"]
            count = action["play"]["count"]
            if kind not in player["hand"] or not 1 <= count <= player["hand"][kind]:
                raise ValueError(f"cannot play {count} {kind} (R-TURN-1)")
            if "order" in action and action["order"] not in player["orders"]:
                raise ValueError(f"{action['order']} is not in the hand (R-TURN-2)")
            size -= count + ("order" in action)
        elif sum(player["hand"].values()) > 0:
            raise ValueError("must play an ingredient while holding one (R-TURN-1)")
        draw = action.get("draw")
        if size >= HAND_LIMIT and draw is not None:
            raise ValueError("a hand of 7 draws nothing (R-TURN-4)")
        if size < HAND_LIMIT and draw not in ("supply", "waiter"):
            raise ValueError("a hand below 7 draws from the supply or the waiter (R-TURN-4)")
        if draw == "waiter" and not player["waiter"]:
            raise ValueError("the waiter is empty (R-TURN-5)")

    def play_turn(self, action: dict[str, Any]) -> None:
        """Plays a checked turn: cards onto the oven, then the refill (R-TURN-*)."""
        seat = self.to_act
        assert seat is not None
        player = self.players[seat]
        if "play" in action:
            kind = action["play"]["ingredient"]
            for _ in range(action["play"]["count"]):
                player["hand"][kind] -= 1
                self.oven.append(kind)
            if "order" in action:
                player["orders"].remove(action["order"])
                self.oven.append(action["order"])
        round_over = False
        draw = action.get("draw")
        if draw == "supply":
            # R-TURN-6: the Mamma Mia! card is laid aside and replaced; R-TURN-7: the
            # round ends with the supply's last card.
            while self.hand_size(seat) < HAND_LIMIT and self.supply:
                card = self.supply.pop(0)
                if card == MAMMA_MIA:
                    self.holder = seat
                else:
                    player["hand"][card] += 1
            round_over = not self.supply
        elif draw == "waiter":
            while self.hand_size(seat) < HAND_LIMIT and player["waiter"]:
                player["orders"].append(player["waiter"].pop(0))
        self.last_actor = seat
        if "pass" in action and draw is None:
            self.passes += 1
        else:
            self.passes = 0
        if round_over or self.passes >= len(self.players):  # R-TURN-7, R-TURN-8
            self.phase = "resolve"
            self.revealed = 0
            self.table = {k: 0 for k in KINDS}
            self.reveal()
        else:
            self.to_act = (seat + 1) % len(self.players)

    # -- resolution -------------------------------------------------------------------

    def reveal(self) -> None:
        """Turns up oven cards until an owner must decide or the oven is done (R-RES-1..3)."""
        while self.revealed < len(self.oven):
            card = self.oven[self.revealed]
            self.revealed += 1
            if card in self.table:
                self.table[card] += 1
                continue
            seat = self.owner(card)
            recipe, options = self.bake_options(card, seat)
            if recipe is not None:
                self.bake(card, seat, recipe)  # R-RES-8: no choice, no question
            elif options:
                self.deciding = card
                self.options = [{"resolve": o} for o in options] + [{"resolve": {"bake": False}}]
                self.to_act = seat
                return
            else:
                self.players[seat]["waiter"].append(card)  # R-RES-9: it fails
        self.deciding = None
        self.options = []
        self.oven = []  # every card has been turned up and gone its way
        self.end_round()

    def bake_options(
        self, card: str, seat: int
    ) -> tuple[dict[str, int] | None, list[dict[str, Any]]]:
        """Returns (the recipe to bake at once, or None; the owner's ways to bake it).

        Both empty means the order fails (R-RES-4..8).
        """
        order = ORDERS[card]
        hand = self.players[seat]["hand"]
        table = self.table
        if order["kind"] == "standard":
            missing = {k: n - table[k] for k, n in order["recipe"].items() if n > table[k]}
            if not missing:
                return order["recipe"], []
            if all(hand[k] >= n for k, n in missing.items()):
                return None, [{"bake": True, "hand": missing}]
            return None, []
        if order["kind"] == "bombastica":
            on_table = sum(table.values())
            if on_table >= 15:
                return dict(table), []
            short = 15 - on_table
            if sum(hand.values()) < short:
                return None, []
            return None, [
                {"bake": True, "hand": {k: n for k, n in c.items() if n}}
                for c in choices(hand, short, KINDS)
            ]
        p = order["personal"]
        if order["kind"] == "minimale":
            # R-RES-6: the "?" is among the other kinds with the lowest count above zero.
            counts = [table[k] for k in KINDS if k != p and table[k] > 0]
            if not counts:
                return None, []
            kinds = [k for k in KINDS if k != p and table[k] == min(counts)]
            size = 3
        else:
            kinds = [k for k in KINDS if k != p]  # R-RES-7: the "J" is free
            size = 6
        options = []
        for k in kinds:
            missing = {}
            if table[p] < 1:
                missing[p] = 1 - table[p]
            if table[k] < size:
                missing[k] = size - table[k]
            if all(hand[m] >= n for m, n in missing.items()):
                option: dict[str, Any] = {"bake": True}
                if len(kinds) > 1:
                    option["ingredient"] = k
                if missing:
                    option["hand"] = missing
                options.append(option)
        if len(kinds) == 1 and options and "hand" not in options[0]:
            return {p: 1, kinds[0]: size}, []
        return None, options

    def resolve(self, decision: dict[str, Any]) -> None:
        """Applies the owner's decision on the order being resolved, then reveals on."""
        card = self.deciding
        seat = self.to_act
        assert card is not None and seat is not None
        if decision["bake"]:
            order = ORDERS[card]
            from_hand = decision.get("hand", {})
            if order["kind"] == "bombastica":
                recipe = dict(self.table)
                for k, n in from_hand.items():
                    recipe[k] += n
            elif order["kind"] == "standard":
                recipe = order["recipe"]
            else:
                kind = decision.get("ingredient") or self.only_kind(order)
                size = 3 if order["kind"] == "minimale" else 6
                recipe = {order["personal"]: 1, kind: size}
            self.bake(card, seat, recipe, from_hand)
        else:
            self.players[seat]["waiter"].append(card)
        self.reveal()

    def only_kind(self, order: dict[str, Any]) -> str:
        """Returns the one kind a Minimale's "?" can be, when the owner was not asked it."""
        p = order["personal"]
        low = min(self.table[k] for k in KINDS if k != p and self.table[k] > 0)
        return next(k for k in KINDS if k != p and self.table[k] == low)

    def bake(
        self, card: str, seat: int, recipe: dict[str, int], from_hand: dict[str, int] | None = None
    ) -> None:
        """Bakes an order: its cards leave the hand and the table for the used pile."""
        player = self.players[seat]
        from_hand = from_hand or {}
        for kind, n in recipe.items():
            in_hand = from_hand.get(kind, 0)
            player["hand"][kind] -= in_hand
            self.table[kind] -= n - in_hand
            self.used += [kind] * n
        player["delivered"].append(card)  # R-RES-9

    # -- rounds -----------------------------------------------------------------------

    def end_round(self) -> None:
        """Ends the game after round 3 (R-END-1), else sets up the next round (R-NEXT-*)."""
        if self.round == ROUNDS:
            self.phase = "over"
            self.to_act = None
            return
        self.oven = [k for k in KINDS for _ in range(self.table[k])]
        self.table = {k: 0 for k in KINDS}
        cards = self.used + self.supply + ([MAMMA_MIA] if self.holder is not None else [])
        if self.reshuffles is not None:
            supply = list(self.reshuffles[self.round - 1])
            if sorted(supply) != sorted(cards):
                raise ValueError(f"reshuffle {self.round - 1} is not the new supply (R-NEXT-2)")
        else:
            supply = cards
            self.rng.shuffle(supply)
        self.supply = supply
        self.used = []
        if self.holder is not None:
            self.to_act = self.holder
        else:
            self.to_act = (self.last_actor + 1) % len(self.players)
        self.holder = None
        self.round += 1
        self.phase = "turn"
        self.passes = 0


def choices(hand: dict[str, int], size: int, kinds: list[str]) -> list[dict[str, int]]:
    """Returns every way to take ``size`` cards from ``hand``, using only ``kinds``."""
    if size == 0:
        return [{}]
    if not kinds:
        return []
    first, rest = kinds[0], kinds[1:]
    out = []
    for take in range(min(hand[first], size), -1, -1):
        for more in choices(hand, size - take, rest):
            out.append({first: take, **more})
    return out


def play_random_game(players: int, seed: int) -> int:
    """Plays one game with uniformly random decisions; returns how many it took."""
    game = ReferenceGame(players, seed=seed)
    choose = random.Random(seed).choice
    decisions = 0
    while not game.is_over():
        game.apply(choose(game.legal_actions()))
        decisions += 1
    return decisions
