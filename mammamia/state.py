"""The game state and the rules that move it: setup, turns, resolution, rounds, scoring.

A ``State`` is mutable for speed; ``copy()`` branches it cheaply and ``child(action)``
returns a new state with the action applied, leaving the original untouched.
All randomness comes from the state's own seeded generator (R-SETUP-8).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Final

from .actions import SUPPLY, WAITER, Action, Counts, Resolve, Turn
from .cards import (
    BOMBASTICA,
    BOMBASTICA_SIZE,
    COLOURS,
    DEALT_INGREDIENTS,
    HAND_LIMIT,
    INGREDIENTS,
    KIND_INDEX,
    MAMMA_MIA,
    MAX_PLAYERS,
    MIN_PLAYERS,
    MINIMALE,
    MONOTONI,
    ORDERS,
    ORDERS_BY_COLOUR,
    STANDARD,
    ingredient_deck,
)
from .errors import IllegalActionError, RecordError

TURN: Final = "turn"
RESOLVE: Final = "resolve"
OVER: Final = "over"
ROUNDS: Final = 3

_DECLINE: Final = Resolve(False)
_USE_ORDER: Final = {
    o.id: (0, 1, 2, 3, 4) if o.kind == BOMBASTICA or o.id.endswith("-mixed")
    else (o.personal, *(k for k in range(5) if k != o.personal))
    for o in ORDERS.values()
}
_ZERO: Final = (0, 0, 0, 0, 0)

# Interned turn actions and caches of legal turns: a hand's legal turns depend only
# on its cards and on whether its waiter is empty, and hands repeat often, so
# enumeration is mostly one dictionary lookup. A new hand is put together from the
# turns that play each kind it holds, which repeat even more often.
_TURNS: dict[tuple[str | None, int, str | None, str | None], Turn] = {}
_LEGAL_TURNS: dict[tuple[tuple[int, ...], tuple[str, ...], bool], tuple[Turn, ...]] = {}
_KIND_TURNS: dict[tuple[int, int, tuple[str, ...], bool], tuple[Turn, ...]] = {}
_LEGAL_CACHE_LIMIT: Final = 200_000


def _turn(kind: str | None, count: int, order: str | None, draw: str | None) -> Turn:
    key = (kind, count, order, draw)
    action = _TURNS.get(key)
    if action is None:
        action = _TURNS[key] = Turn(kind, count, order, draw)
    return action


def _enumerate_turns(ings: tuple[int, ...], orders: tuple[str, ...],
                     waiter: bool) -> tuple[Turn, ...]:
    """Returns every legal turn for a hand, in canonical order (kind, count, order, draw)."""
    draws: tuple[str | None, ...] = (SUPPLY, WAITER) if waiter else (SUPPLY,)
    if not any(ings):
        # R-TURN-3: pass; R-TURN-4: a hand below 7 draws from one source.
        if len(orders) >= HAND_LIMIT:
            return (_turn(None, 0, None, None),)
        return tuple(_turn(None, 0, None, d) for d in draws)
    # R-TURN-1/2: any count of one kind, maybe an order; the hand is then below 7
    # and draws (R-TURN-4).
    out: tuple[Turn, ...] = ()
    for k, have in enumerate(ings):
        if have:
            key = (k, have, orders, waiter)
            block = _KIND_TURNS.get(key)
            if block is None:
                kind = INGREDIENTS[k]
                block = _KIND_TURNS[key] = tuple(
                    _turn(kind, count, order, d)
                    for count in range(1, have + 1)
                    for order in (None, *orders)
                    for d in draws)
            out += block
    return out


def _sub_multisets(have: Sequence[int], size: int, start: int = 0) -> list[list[int]]:
    """Returns every choice of ``size`` cards from counts ``have`` (kinds from ``start``),
    earlier kinds taking as many as they can first."""
    if size == 0:
        return [[0] * (len(have) - start)]
    if start == len(have):
        return []
    out = []
    for take in range(min(have[start], size), -1, -1):
        for rest in _sub_multisets(have, size - take, start + 1):
            out.append([take, *rest])
    return out


def _minimale_kinds(table: Sequence[int], personal: int) -> list[int]:
    """Returns the kinds a Minimale's "?" may be (R-RES-6): those other than the
    personal one with the lowest non-zero count on the table."""
    present = [t for k, t in enumerate(table) if k != personal and t]
    if not present:
        return []
    low = min(present)
    return [k for k, t in enumerate(table) if k != personal and t == low]


def _counts(values: Sequence[int]) -> Counts:
    a, b, c, d, e = values
    return (a, b, c, d, e)


class State:
    """A game of Mamma Mia! at one moment.

    Public attributes are read-only by convention; change a state only through
    ``apply``. ``to_act`` is the seat asked now (None when the game is over).
    """

    __slots__ = (
        "_deal", "_options", "_reshuffle_plan", "_reshuffles", "_reveal", "_rng", "_rng_shared",
        "colours", "deciding", "delivered", "events", "hand_ings", "hand_orders",
        "holder", "last_actor", "oven", "phase", "players", "round", "seat_of_colour",
        "stall", "supply", "table", "to_act", "used", "waiters",
    )

    players: int
    colours: tuple[str, ...]
    seat_of_colour: dict[str, int]
    round: int
    phase: str
    to_act: int | None
    supply: list[str]          # top card last, so a draw is list.pop()
    oven: list[str]            # first played first (R-RES-1)
    table: list[int]           # counts by kind, during resolution
    used: list[str]
    holder: int | None
    hand_ings: list[list[int]]
    hand_orders: list[list[str]]   # kept sorted
    waiters: list[list[str]]       # top first
    delivered: list[list[str]]
    deciding: str | None
    stall: int
    last_actor: int
    # What happened, in order, as plain tuples (views.Event is their public form):
    # ("round", round, first seat), ("turn", seat, kind | None, count, order | None,
    # draw | None, cards drawn, drew Mamma Mia!), ("round_end", round, stalemate),
    # ("bake", seat, order, "?"/"J" kind | None, hand counts | None, auto,
    # table counts used), ("fail", seat, order, declined), ("over",).
    events: list[tuple[Any, ...]]
    _deal: dict[str, Any]
    _reshuffle_plan: list[list[str]] | None
    _reshuffles: list[list[str]]
    _rng: random.Random
    _rng_shared: bool
    _options: tuple[Resolve, ...]
    _reveal: int

    # -- construction -------------------------------------------------------------

    @classmethod
    def new(cls, players: int, seed: int = 0, colours: Sequence[str] | None = None,
            first_player: int | None = None,
            deal: dict[str, Any] | None = None,
            reshuffles: Sequence[Sequence[str]] | None = None) -> State:
        """Returns a new game (R-SETUP-*); raises IllegalActionError for a bad setup.

        ``deal`` stacks the opening (``hands``, ``supply`` top first, ``waiters`` top
        first) instead of shuffling; ``reshuffles`` fixes the supplies of rounds 2 and 3.
        Both are taken as given: the record reader validates them, except that a
        reshuffle must hold exactly the cards of its new supply, which is known only
        when a round ends; the ``apply`` that ends it then raises RecordError
        (R-NEXT-2) and leaves the state unusable.
        """
        if type(players) is not int or not MIN_PLAYERS <= players <= MAX_PLAYERS:
            raise IllegalActionError(f"players must be 2 to 5, got {players!r}", "R-SETUP-1")
        colours = tuple(colours) if colours is not None else COLOURS[:players]
        if len(colours) != players or len(set(colours)) != players or \
                any(c not in COLOURS for c in colours):
            raise IllegalActionError(
                f"colours must be {players} distinct colours of {list(COLOURS)}, "
                f"got {list(colours)!r}",
                "R-SETUP-1")
        if first_player is not None and (type(first_player) is not int
                                         or not 0 <= first_player < players):
            raise IllegalActionError(f"first_player must be a seat 0..{players - 1}, "
                                     f"got {first_player!r}", "R-SETUP-6")
        s = cls.__new__(cls)
        s._rng = random.Random(seed)
        s._rng_shared = False
        s.players = players
        s.colours = colours
        s.seat_of_colour = {c: i for i, c in enumerate(colours)}
        if deal is None:
            # R-SETUP-2..5: shuffle and deal ingredients, shuffle the Mamma Mia! card
            # into the rest, and shuffle each waiter.
            deck = ingredient_deck(players)
            s._rng.shuffle(deck)
            dealt = DEALT_INGREDIENTS
            hands = [deck[i * dealt:(i + 1) * dealt] for i in range(players)]
            supply_top_first = [*deck[players * dealt:], MAMMA_MIA]
            s._rng.shuffle(supply_top_first)
            waiters = []
            for c in colours:
                w = [o.id for o in ORDERS_BY_COLOUR[c]]
                s._rng.shuffle(w)
                waiters.append(w)
        else:
            hands = [list(h) for h in deal["hands"]]
            supply_top_first = list(deal["supply"])
            waiters = [list(w) for w in deal["waiters"]]
        if first_player is None:
            first_player = s._rng.randrange(players)
        s._deal = {"hands": [list(h) for h in hands], "supply": list(supply_top_first),
                   "waiters": [list(w) for w in waiters]}
        s._reshuffle_plan = [list(r) for r in reshuffles] if reshuffles is not None else None
        s._reshuffles = []
        s.round = 1
        s.phase = TURN
        s.to_act = first_player
        s.supply = supply_top_first[::-1]
        s.oven = []
        s.table = [0, 0, 0, 0, 0]
        s.used = []
        s.holder = None
        s.hand_ings = []
        for h in hands:
            counts = [0, 0, 0, 0, 0]
            for card in h:
                counts[KIND_INDEX[card]] += 1
            s.hand_ings.append(counts)
        s.waiters = waiters
        s.hand_orders = [[w.pop(0)] for w in waiters]   # R-SETUP-5
        s.delivered = [[] for _ in range(players)]
        s.deciding = None
        s._options = ()
        s._reveal = 0
        s.stall = 0
        s.last_actor = first_player
        s.events = [("round", 1, first_player)]
        return s

    def copy(self) -> State:
        """Returns an independent copy of this state (its generator included)."""
        s = State.__new__(State)
        s.players = self.players
        s.colours = self.colours
        s.seat_of_colour = self.seat_of_colour
        s.round = self.round
        s.phase = self.phase
        s.to_act = self.to_act
        s.supply = self.supply[:]
        s.oven = self.oven[:]
        s.table = self.table[:]
        s.used = self.used[:]
        s.holder = self.holder
        s.hand_ings = [h[:] for h in self.hand_ings]
        s.hand_orders = [h[:] for h in self.hand_orders]
        s.waiters = [w[:] for w in self.waiters]
        s.delivered = [d[:] for d in self.delivered]
        s.deciding = self.deciding
        s._options = self._options
        s._reveal = self._reveal
        s.stall = self.stall
        s.last_actor = self.last_actor
        s.events = self.events[:]
        s._deal = self._deal
        s._reshuffle_plan = self._reshuffle_plan
        s._reshuffles = self._reshuffles[:]
        # Copies share the generator until one of them shuffles (at a round's end):
        # copying its state on every branch would cost most of the copy.
        s._rng = self._rng
        s._rng_shared = self._rng_shared = True
        return s

    def _own_rng(self) -> random.Random:
        """Returns this state's generator, first made its own if copies share it."""
        if self._rng_shared:
            rng = random.Random()
            rng.setstate(self._rng.getstate())
            self._rng = rng
            self._rng_shared = False
        return self._rng

    def child(self, action: Action) -> State:
        """Returns a copy of this state with ``action`` applied; raises IllegalActionError."""
        s = self.copy()
        s.apply(action)
        return s

    # -- queries --------------------------------------------------------------------

    @property
    def is_over(self) -> bool:
        """Whether the third resolution has ended the game (R-END-1)."""
        return self.phase == OVER

    def legal_actions(self) -> tuple[Action, ...]:
        """Returns every legal action of ``to_act`` in the engine's canonical order
        (empty when the game is over)."""
        if self.phase == TURN:
            seat = self.to_act
            assert seat is not None
            key = (tuple(self.hand_ings[seat]), tuple(self.hand_orders[seat]),
                   bool(self.waiters[seat]))
            legal = _LEGAL_TURNS.get(key)
            if legal is None:
                if len(_LEGAL_TURNS) >= _LEGAL_CACHE_LIMIT:
                    _LEGAL_TURNS.clear()
                    _KIND_TURNS.clear()
                legal = _LEGAL_TURNS[key] = _enumerate_turns(*key)
            return legal
        if self.phase == RESOLVE:
            return self._options
        return ()

    def hand_size(self, seat: int) -> int:
        """Returns the number of cards in a seat's hand (ingredients and orders)."""
        return sum(self.hand_ings[seat]) + len(self.hand_orders[seat])

    def scores(self) -> list[tuple[int, int]]:
        """Returns each seat's (pizzas delivered, ingredient cards in hand) (R-END-2)."""
        return [(len(self.delivered[i]), sum(self.hand_ings[i])) for i in range(self.players)]

    def ranking(self) -> list[int]:
        """Returns each seat's rank (1 is best; equal scores share a rank, R-END-2)."""
        scores = self.scores()
        return [1 + sum(1 for other in scores if other > mine) for mine in scores]

    def winners(self) -> list[int]:
        """Returns the winning seats once the game is over (R-END-2), else an empty list."""
        if self.phase != OVER:
            return []
        return [i for i, r in enumerate(self.ranking()) if r == 1]

    def owner(self, order: str) -> int:
        """Returns the seat that owns an order card."""
        return self.seat_of_colour[ORDERS[order].colour]

    @property
    def revealed(self) -> int:
        """Returns how many oven cards the current resolution has revealed."""
        return self._reveal

    @property
    def deal(self) -> dict[str, Any]:
        """Returns the opening deal (hands, supply top first, waiters top first)."""
        return self._deal

    @property
    def reshuffles(self) -> list[list[str]]:
        """Returns the supplies (top first) made at the start of rounds 2 and 3 so far."""
        return self._reshuffles

    # -- applying actions -----------------------------------------------------------

    def apply(self, action: Action) -> None:
        """Applies ``action`` for ``to_act``; raises IllegalActionError citing the rule.

        On error the state is unchanged.
        """
        if self.phase == TURN:
            if not isinstance(action, Turn):
                raise IllegalActionError(f"a turn is asked, not a resolution decision: {action}",
                                         "R-TURN-1")
            self._apply_turn(action)
        elif self.phase == RESOLVE:
            if not isinstance(action, Resolve):
                raise IllegalActionError(
                    f"the owner of {self.deciding} must decide how to resolve it, "
                    f"not take a turn", "R-RES-8")
            if action not in self._options:
                raise IllegalActionError(self._resolve_fault(action), self._resolve_rule())
            self._apply_resolve(action)
        else:
            raise IllegalActionError("the game is over", "R-END-1")

    def _apply_turn(self, action: Turn) -> None:
        seat = self.to_act
        assert seat is not None
        ings = self.hand_ings[seat]
        orders = self.hand_orders[seat]
        kind = action.ingredient
        # Check everything first so that a refused action changes nothing.
        if kind is None:
            if any(ings):
                raise IllegalActionError("must play at least one ingredient card while "
                                         "holding one", "R-TURN-1")
            if action.order is not None:
                raise IllegalActionError(f"a pass plays no order card, got {action.order!r}",
                                         "R-TURN-3")
            k = -1
            count = 0
        else:
            k = KIND_INDEX.get(kind, -1)
            if k < 0:
                raise IllegalActionError(f"unknown ingredient {kind!r}", "R-COMP-1")
            count = action.count
            if type(count) is not int or count < 1:
                raise IllegalActionError(f"must play 1 or more cards, got count {count!r}",
                                         "R-TURN-1")
            if ings[k] < count:
                raise IllegalActionError(f"cannot play {count} {kind}: the hand holds "
                                         f"{ings[k]}", "R-TURN-1")
            if action.order is not None and action.order not in orders:
                raise IllegalActionError(f"order {action.order!r} is not in the hand",
                                         "R-TURN-2")
        size_after = sum(ings) + len(orders) - count - (action.order is not None)
        draw = action.draw
        if size_after >= HAND_LIMIT:
            if draw is not None:
                raise IllegalActionError(f"a hand of 7 draws nothing, got draw {draw!r}",
                                         "R-TURN-4")
        elif draw == WAITER:
            if not self.waiters[seat]:
                raise IllegalActionError("cannot draw from an empty waiter while the supply "
                                         "has cards", "R-TURN-5")
        elif draw != SUPPLY:
            raise IllegalActionError(f"a hand below 7 cards must draw from 'supply' or "
                                     f"'waiter', got {draw!r}", "R-TURN-4")

        # Play onto the oven (R-TURN-1/2).
        oven = self.oven
        if kind is not None:
            ings[k] -= count
            oven.extend([kind] * count)
            if action.order is not None:
                orders.remove(action.order)
                oven.append(action.order)

        # Refill from one source (R-TURN-4, R-TURN-6, R-TURN-7).
        drawn = 0
        mamma_mia = False
        round_over = False
        if draw == SUPPLY:
            supply = self.supply
            need = HAND_LIMIT - size_after
            while need and supply:
                card = supply.pop()
                if card == MAMMA_MIA:
                    self.holder = seat
                    mamma_mia = True
                    continue
                ings[KIND_INDEX[card]] += 1
                drawn += 1
                need -= 1
            round_over = not supply
        elif draw == WAITER:
            waiter = self.waiters[seat]
            need = min(HAND_LIMIT - size_after, len(waiter))
            if need:
                orders.extend(waiter[:need])
                del waiter[:need]
                orders.sort()
                drawn = need
        self.events.append(("turn", seat, kind, count, action.order, draw, drawn, mamma_mia))
        self.last_actor = seat

        # R-TURN-8: a full circle of passes that draw nothing ends the round.
        if kind is None and draw is None:
            self.stall += 1
            stalemate = self.stall >= self.players
        else:
            self.stall = 0
            stalemate = False
        if round_over or stalemate:
            self.events.append(("round_end", self.round, stalemate))
            self._start_resolution()
        else:
            self.to_act = seat + 1 if seat + 1 < self.players else 0

    # -- resolution (R-RES-*) ---------------------------------------------------------

    def _start_resolution(self) -> None:
        self.phase = RESOLVE
        self._reveal = 0
        self.table = [0, 0, 0, 0, 0]
        self._advance()

    def _advance(self) -> None:
        """Reveals oven cards until an owner must decide or the oven is empty."""
        oven = self.oven
        table = self.table
        while self._reveal < len(oven):
            card = oven[self._reveal]
            self._reveal += 1
            k = KIND_INDEX.get(card)
            if k is not None:
                table[k] += 1
                continue
            seat = self.owner(card)
            auto, options = self._options_for(card, seat)
            if auto is not None:
                self._bake(card, seat, auto, None, None, True)
            elif options:
                self.deciding = card
                self._options = (*options, _DECLINE)
                self.to_act = seat
                return
            else:
                self.waiters[seat].append(card)     # R-RES-9: fails, to the waiter's bottom
                self.events.append(("fail", seat, card, False))
        self.deciding = None
        self._options = ()
        del oven[:]
        self._end_round()

    def _options_for(self, card: str, seat: int) -> tuple[Counts | None, list[Resolve]]:
        """Returns (table cards to bake with at once, or None; the owner's bake options).

        Per R-RES-8 an order the table completes with no choice bakes at once; the
        owner is asked only when a choice exists; no options means it fails.
        """
        order = ORDERS[card]
        table = self.table
        have = self.hand_ings[seat]
        if order.kind == STANDARD:
            need = order.need
            missing = [max(0, n - t) for n, t in zip(need, table, strict=True)]
            if not any(missing):
                return need, []
            if all(m <= h for m, h in zip(missing, have, strict=True)):
                return None, [Resolve(True, None, _counts(missing))]
            return None, []
        if order.kind == BOMBASTICA:
            on_table = sum(table)
            if on_table >= BOMBASTICA_SIZE:
                return _counts(table), []
            short = BOMBASTICA_SIZE - on_table
            if sum(have) < short:
                return None, []
            return None, [Resolve(True, None, _counts(c)) for c in _sub_multisets(have, short)]
        p = order.personal
        if order.kind == MINIMALE:
            # R-RES-6: "?" is a kind other than the personal one with the lowest
            # non-zero count on the table.
            kinds = _minimale_kinds(table, p)
            if not kinds:
                return None, []
            size = 3
        else:
            assert order.kind == MONOTONI
            kinds = [k for k in range(5) if k != p]
            size = 6
        options = []
        for k in kinds:
            missing = [0, 0, 0, 0, 0]
            missing[p] = max(0, 1 - table[p])
            missing[k] = max(0, size - table[k])
            if missing[p] <= have[p] and missing[k] <= have[k]:
                hand = _counts(missing) if any(missing) else None
                options.append(Resolve(True, INGREDIENTS[k] if len(kinds) > 1 else None, hand))
        if len(kinds) == 1 and options and options[0].hand is None:
            recipe = [0, 0, 0, 0, 0]
            recipe[p] = 1
            recipe[kinds[0]] = size
            return _counts(recipe), []
        return None, options

    def _resolve_rule(self) -> str:
        kind = ORDERS[self.deciding].kind if self.deciding else STANDARD
        return {STANDARD: "R-RES-4", BOMBASTICA: "R-RES-5", MINIMALE: "R-RES-6",
                MONOTONI: "R-RES-7"}[kind]

    def _resolve_fault(self, action: Resolve) -> str:
        allowed = "; ".join(str(o) for o in self._options)
        return f"{action} is not a way to resolve {self.deciding}: choose one of: {allowed}"

    def _apply_resolve(self, action: Resolve) -> None:
        card = self.deciding
        seat = self.to_act
        assert card is not None and seat is not None
        if action.bake:
            order = ORDERS[card]
            hand = action.hand or _ZERO
            if order.kind == BOMBASTICA:
                from_table: Counts = _counts(self.table)
            elif order.kind == STANDARD:
                from_table = _counts([n - h for n, h in zip(order.need, hand, strict=True)])
            else:
                k = KIND_INDEX[action.ingredient] if action.ingredient else \
                    _minimale_kinds(self.table, order.personal)[0]
                need = [0, 0, 0, 0, 0]
                need[order.personal] = 1
                need[k] = 3 if order.kind == MINIMALE else 6
                from_table = _counts([n - h for n, h in zip(need, hand, strict=True)])
            self._bake(card, seat, from_table, action.hand, action.ingredient, False)
        else:
            self.waiters[seat].append(card)
            self.events.append(("fail", seat, card, True))
        self._advance()

    def _bake(self, card: str, seat: int, from_table: Sequence[int], hand: Counts | None,
              ingredient: str | None, auto: bool) -> None:
        table = self.table
        have = self.hand_ings[seat]
        hand = hand or _ZERO
        used = self.used
        # The used pile takes the recipe's cards kind by kind, the personal ingredient
        # first where the recipe names one (1 P + ...); the order matters because the
        # used pile is shuffled into the next supply.
        for k in _USE_ORDER[card]:
            n = from_table[k] + hand[k]
            if n:
                table[k] -= from_table[k]
                have[k] -= hand[k]
                used.extend([INGREDIENTS[k]] * n)
        self.delivered[seat].append(card)
        self.events.append(("bake", seat, card, ingredient, hand if any(hand) else None, auto,
                            _counts(from_table)))

    # -- rounds -------------------------------------------------------------------------

    def _end_round(self) -> None:
        if self.round >= ROUNDS:
            self.phase = OVER
            self.to_act = None
            self.events.append(("over",))
            return
        # R-NEXT-1: the table's leftovers become the new oven, in canonical order.
        table = self.table
        self.oven = [INGREDIENTS[k] for k in range(5) for _ in range(table[k])]
        self.table = [0, 0, 0, 0, 0]
        # R-NEXT-2: used pile, the Mamma Mia! card and any supply left over make the
        # new supply; the used pile leaves the kitchen with them.
        cards = self.used + self.supply[::-1]
        if self.holder is not None:
            cards.append(MAMMA_MIA)
        plan = self._reshuffle_plan
        if plan is not None and len(plan) > self.round - 1:
            new_supply = list(plan[self.round - 1])
            if sorted(new_supply) != sorted(cards):
                raise RecordError(
                    f"reshuffles[{self.round - 1}] must be exactly the cards of the new supply "
                    f"({_describe(cards)}), got {_describe(new_supply)} (R-NEXT-2)", "R-NEXT-2")
        else:
            new_supply = cards
            self._own_rng().shuffle(new_supply)
        self._reshuffles.append(list(new_supply))
        self.supply = new_supply[::-1]
        self.used = []
        # R-NEXT-3: the holder starts; after a stalemate without one, the next seat.
        start = self.holder if self.holder is not None else (self.last_actor + 1) % self.players
        self.holder = None
        self.round += 1
        self.phase = TURN
        self.to_act = start
        self.stall = 0
        self.events.append(("round", self.round, start))



def _describe(cards: Sequence[str]) -> str:
    """Returns a short count-by-card description of a pile, e.g. '3 salami, 1 mamma-mia'."""
    counts: dict[str, int] = {}
    for c in cards:
        counts[c] = counts.get(c, 0) + 1
    return ", ".join(f"{n} {c}" for c, n in sorted(counts.items())) or "no cards"


def new_game(players: int, seed: int = 0, colours: Sequence[str] | None = None,
             first_player: int | None = None) -> State:
    """Returns a new shuffled game for 2 to 5 players; raises IllegalActionError (R-SETUP-1)."""
    return State.new(players, seed, colours, first_player)
