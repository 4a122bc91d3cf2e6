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
    o.id: (0, 1, 2, 3, 4)
    if o.kind == BOMBASTICA or o.id.endswith("-mixed")
    else (o.personal, *(k for k in range(5) if k != o.personal))
    for o in ORDERS.values()
}
_ZERO: Final = (0, 0, 0, 0, 0)

# What resolving an order needs, looked up once per revealed order instead of
# walking the Order and its five counts: (kind, personal ingredient, the recipe's
# (kind, count) pairs and its cards, both in the order the cards go onto the used
# pile). The pairs and cards are empty for the specials.
_RECIPES: Final[dict[str, tuple[str, int, tuple[tuple[int, int], ...], list[str]]]] = {
    o.id: (
        o.kind,
        o.personal,
        tuple((k, o.need[k]) for k in _USE_ORDER[o.id] if o.need[k]),
        [INGREDIENTS[k] for k in _USE_ORDER[o.id] for _ in range(o.need[k])],
    )
    for o in ORDERS.values()
}
_OVEN_KIND: Final[dict[str, int]] = {**KIND_INDEX, **dict.fromkeys(ORDERS, -1)}
"""The kind of each card that goes into the oven: an ingredient's index, -1 for an order."""
_OTHER_KINDS: Final = tuple(tuple(k for k in range(5) if k != p) for p in range(5))
"""The kinds a Monotoni's "J" may be, by the owner's personal ingredient (R-RES-7)."""

# The swaps of a shuffle of n cards (see _shuffle): for each position i from the
# last down to 1, the bits drawn for a position in 0..i.
_SHUFFLE_PLANS: Final = tuple(
    tuple((i, (i + 1).bit_length()) for i in range(n - 1, 0, -1)) for n in range(128)
)

# Interned turn actions and caches of legal turns. A hand's legal turns are the
# turns that play each kind it holds, one block per (kind, count held), in
# canonical order; a block depends only on the kind, the count, the orders in
# hand and whether the waiter is empty. Those last two make a seat's *context*:
# each context keeps its blocks in a list indexed by 8 * kind + count (index 0:
# the turns of a hand without ingredients), so enumerating a hand's turns is one
# dictionary lookup, a list index per kind held and a concatenation. A seat only
# ever holds orders of its own colour, so there are at most 5 * 2**8 * 2
# contexts and the cache needs no bound. _CONTEXTS[waiter is empty] maps the
# orders in hand to the context's blocks.
_TURNS: dict[tuple[str | None, int, str | None, str | None], Turn] = {}
_ROWS: dict[tuple[int, int, str | None, bool], tuple[Turn, ...]] = {}
_Blocks = list[tuple[Turn, ...] | None]
_CONTEXTS: Final[tuple[dict[tuple[str, ...], _Blocks], dict[tuple[str, ...], _Blocks]]] = ({}, {})

_COLOUR_SET: Final = frozenset(COLOURS)
_ORDER_IDS: Final = {c: tuple(o.id for o in orders) for c, orders in ORDERS_BY_COLOUR.items()}
"""Each colour's order ids in canonical order, the waiter before its shuffle."""

# The seat owning each order card, by the game's colours (at most 325 orderings).
_OWNERS: dict[tuple[str, ...], dict[str, int]] = {}

# Interned resolution options: the owner's choices repeat far more often than
# they differ, so they are built once (R-RES-8; declining is always last).
_STANDARD_ASKS: dict[Counts, tuple[Resolve, ...]] = {}
_BOMBASTICA_ASKS: dict[tuple[int, ...], tuple[Resolve, ...]] = {}
_RESOLVES: dict[tuple[str | None, Counts | None], Resolve] = {}
_SPECIAL_ASKS: dict[tuple[bool, int, int, int, int], Resolve] = {}


def _turn(kind: str | None, count: int, order: str | None, draw: str | None) -> Turn:
    key = (kind, count, order, draw)
    action = _TURNS.get(key)
    if action is None:
        action = _TURNS[key] = Turn(kind, count, order, draw)
    return action


def _turn_block(
    blocks: _Blocks, waiter_empty: bool, orders: tuple[str, ...], index: int
) -> tuple[Turn, ...]:
    """Returns (and keeps in ``blocks``) the legal turns of one block of a context
    (see _CONTEXTS), in canonical order (kind, count, order, draw)."""
    if index == 0:
        # R-TURN-3: pass; R-TURN-4: a hand below 7 draws from one source.
        if len(orders) >= HAND_LIMIT:
            block: tuple[Turn, ...] = (_turn(None, 0, None, None),)
        elif waiter_empty:
            block = (_turn(None, 0, None, SUPPLY),)
        else:
            block = (_turn(None, 0, None, SUPPLY), _turn(None, 0, None, WAITER))
    else:
        # R-TURN-1/2: any count of one kind, maybe an order; the hand is then below 7
        # and draws (R-TURN-4). The block of n cards is that of n - 1 cards and the
        # turns that play all n.
        count = index & 7
        block = (
            ()
            if count == 1
            else blocks[index - 1] or _turn_block(blocks, waiter_empty, orders, index - 1)
        )
        k = index >> 3
        block += _row(k, count, None, waiter_empty)
        for order in orders:
            block += _row(k, count, order, waiter_empty)
    blocks[index] = block
    return block


def _row(k: int, count: int, order: str | None, waiter_empty: bool) -> tuple[Turn, ...]:
    """Returns the turns playing ``count`` cards of kind ``k`` and ``order``, one per
    source the hand may draw from: the pieces blocks are made of (kept in _ROWS, as
    contexts share them)."""
    key = (k, count, order, waiter_empty)
    row = _ROWS.get(key)
    if row is None:
        kind = INGREDIENTS[k]
        row = (
            (_turn(kind, count, order, SUPPLY),)
            if waiter_empty
            else (_turn(kind, count, order, SUPPLY), _turn(kind, count, order, WAITER))
        )
        _ROWS[key] = row
    return row


def _shuffle(rng: random.Random, cards: list[Any]) -> None:
    """Shuffles ``cards`` in place, with exactly the result of ``rng.shuffle(cards)``.

    This is CPython's Fisher-Yates shuffle over ``getrandbits`` (``random.shuffle``
    with ``_randbelow_with_getrandbits``) written out, without its two method calls
    per card: shuffles are a tenth of a random game. The same seed therefore still
    gives the same game (R-SETUP-8); tests/bench/test_reference_engine.py replays
    seeded games in an engine that shuffles with the standard library.
    """
    n = len(cards)
    if n >= len(_SHUFFLE_PLANS):
        rng.shuffle(cards)
        return
    getrandbits = rng.getrandbits
    for i, k in _SHUFFLE_PLANS[n]:
        j = getrandbits(k)
        while j > i:
            j = getrandbits(k)
        cards[i], cards[j] = cards[j], cards[i]


def _standard_asks(hand: Counts) -> tuple[Resolve, ...]:
    """Returns the interned options of a standard order missing ``hand`` (R-RES-4)."""
    asks = _STANDARD_ASKS.get(hand)
    if asks is None:
        asks = _STANDARD_ASKS[hand] = (_resolve(None, hand), _DECLINE)
    return asks


def _special_ask(single: bool, p: int, need_p: int, k: int, need_k: int) -> Resolve:
    """Returns the interned decision to bake a Minimale or Monotoni with "?"/"J" ``k``
    (named unless it is the ``single`` possible one) adding ``need_p`` personal and
    ``need_k`` ``k`` cards from hand."""
    key = (single, p, need_p, k, need_k)
    action = _SPECIAL_ASKS.get(key)
    if action is None:
        hand = [0, 0, 0, 0, 0]
        hand[p] = need_p
        hand[k] = need_k
        action = _SPECIAL_ASKS[key] = _resolve(None if single else INGREDIENTS[k], _counts(hand))
    return action


def _resolve(ingredient: str | None, hand: Counts | None) -> Resolve:
    """Returns the interned decision to bake with ``ingredient`` and ``hand``."""
    key = (ingredient, hand)
    action = _RESOLVES.get(key)
    if action is None:
        action = _RESOLVES[key] = Resolve(True, ingredient, hand)
    return action


def _sub_multisets(have: Sequence[int], size: int) -> list[tuple[int, ...]]:
    """Returns every choice of ``size`` cards from counts ``have``, as counts by kind,
    earlier kinds taking as many as they can first."""
    # Choices grow kind by kind, each keeping the cards it has still to take; a kind
    # takes at least what the later kinds cannot make up, so every choice completes.
    # Extending them in order, most cards first, keeps the whole list in that order.
    choices: list[tuple[tuple[int, ...], int]] = [((), size)]
    for k, held in enumerate(have):
        later = sum(have[k + 1 :])
        choices = [
            ((*chosen, take), left - take)
            for chosen, left in choices
            for take in range(min(held, left), max(left - later, 0) - 1, -1)
        ]
    return [chosen for chosen, _ in choices]


def _minimale_kinds(table: Sequence[int], personal: int) -> list[int]:
    """Returns the kinds a Minimale's "?" may be (R-RES-6): those other than the
    personal one with the lowest non-zero count on the table."""
    present = [t for k, t in enumerate(table) if k != personal and t]
    if not present:
        return []
    low = min(present)
    return [k for k, t in enumerate(table) if k != personal and t == low]


def _counts_of(cards: Sequence[str]) -> list[int]:
    """Returns how many of ``cards`` are of each ingredient kind."""
    counts = [0, 0, 0, 0, 0]
    kind_index = KIND_INDEX
    for card in cards:
        counts[kind_index[card]] += 1
    return counts


def _counts(values: Sequence[int]) -> Counts:
    a, b, c, d, e = values
    return (a, b, c, d, e)


def _minus(values: Sequence[int], less: Sequence[int]) -> Counts:
    """Returns ``values`` less ``less``, kind by kind."""
    a, b, c, d, e = values
    f, g, h, i, j = less
    return (a - f, b - g, c - h, d - i, e - j)


class State:
    """A game of Mamma Mia! at one moment.

    Public attributes are read-only by convention; change a state only through
    ``apply``. ``to_act`` is the seat asked now (None when the game is over).
    """

    __slots__ = (
        "_deal",
        "_options",
        "_owner",
        "_reshuffle_plan",
        "_reshuffles",
        "_reveal",
        "_rng",
        "_rng_shared",
        "_shared",
        "_turns",
        "colours",
        "deciding",
        "delivered",
        "events",
        "hand_ings",
        "hand_orders",
        "holder",
        "last_actor",
        "oven",
        "phase",
        "players",
        "round",
        "seat_of_colour",
        "stall",
        "supply",
        "table",
        "to_act",
        "used",
        "waiters",
    )

    players: int
    colours: tuple[str, ...]
    seat_of_colour: dict[str, int]
    round: int
    phase: str
    to_act: int | None
    supply: list[str]  # top card last, so a draw is list.pop()
    oven: list[str]  # first played first (R-RES-1)
    table: list[int]  # counts by kind, during resolution
    used: list[str]
    holder: int | None
    hand_ings: list[list[int]]
    hand_orders: list[list[str]]  # kept sorted
    waiters: list[list[str]]  # top first
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
    _owner: dict[str, int]  # the seat owning each order card in the game
    # Bit i set: seat i's lists (hand_ings[i], hand_orders[i], waiters[i],
    # delivered[i]) may be shared with another state made by child(), so they are
    # copied (_own) before this state changes them.
    _shared: int
    # The legal turns once legal_actions() has enumerated them (None until then and
    # after every turn; resolutions keep their options in _options).
    _turns: tuple[Turn, ...] | None
    _reveal: int

    # -- construction -------------------------------------------------------------

    @classmethod
    def new(
        cls,
        players: int,
        seed: int = 0,
        colours: Sequence[str] | None = None,
        first_player: int | None = None,
        deal: dict[str, Any] | None = None,
        reshuffles: Sequence[Sequence[str]] | None = None,
    ) -> State:
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
        # The default colours need no checking.
        colours = COLOURS[:players] if colours is None else _checked_colours(players, colours)
        if first_player is not None and (
            type(first_player) is not int or not 0 <= first_player < players
        ):
            raise IllegalActionError(
                f"first_player must be a seat 0..{players - 1}, got {first_player!r}", "R-SETUP-6"
            )
        s = cls.__new__(cls)
        s._rng = random.Random(seed)
        s._rng_shared = False
        s.players = players
        s.colours = colours
        s.seat_of_colour = dict(zip(colours, range(players), strict=True))
        owner = _OWNERS.get(colours)
        if owner is None:
            owner = _OWNERS[colours] = {
                o.id: i for i, c in enumerate(colours) for o in ORDERS_BY_COLOUR[c]
            }
        s._owner = owner
        s._shared = 0
        s._turns = None
        if deal is None:
            # R-SETUP-2..5: shuffle and deal ingredients, shuffle the Mamma Mia! card
            # into the rest, and shuffle each waiter.
            deck = ingredient_deck(players)
            _shuffle(s._rng, deck)
            dealt = DEALT_INGREDIENTS
            hands = [deck[i * dealt : (i + 1) * dealt] for i in range(players)]
            supply_top_first = [*deck[players * dealt :], MAMMA_MIA]
            _shuffle(s._rng, supply_top_first)
            waiters = []
            for c in colours:
                w = list(_ORDER_IDS[c])
                _shuffle(s._rng, w)
                waiters.append(w)
        else:
            hands = [list(h) for h in deal["hands"]]
            supply_top_first = list(deal["supply"])
            waiters = [list(w) for w in deal["waiters"]]
        if first_player is None:
            first_player = s._rng.randrange(players)
        # The hands and the supply as dealt are not changed below (the game's own
        # supply is a reversed copy); the waiters are, so the deal keeps copies.
        s._deal = {"hands": hands, "supply": supply_top_first, "waiters": [w[:] for w in waiters]}
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
        s.hand_ings = [_counts_of(h) for h in hands]
        s.waiters = waiters
        s.hand_orders = [[w.pop(0)] for w in waiters]  # R-SETUP-5
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
        return self._clone(True)

    def _clone(self, deep: bool) -> State:
        """Returns a copy of this state; unless ``deep``, one whose seats' hands,
        waiters and delivered piles are shared with this state until either changes
        them (see ``_shared``)."""
        s = State.__new__(State)
        s.players = self.players
        s.colours = self.colours
        s.seat_of_colour = self.seat_of_colour
        s._owner = self._owner
        s.round = self.round
        s.phase = self.phase
        s.to_act = self.to_act
        s.supply = self.supply[:]
        s.oven = self.oven[:]
        s.table = self.table[:]
        s.used = self.used[:]
        s.holder = self.holder
        if deep:
            copy = list.copy
            s.hand_ings = list(map(copy, self.hand_ings))
            s.hand_orders = list(map(copy, self.hand_orders))
            s.waiters = list(map(copy, self.waiters))
            s.delivered = list(map(copy, self.delivered))
            s._shared = 0
        else:
            s.hand_ings = self.hand_ings[:]
            s.hand_orders = self.hand_orders[:]
            s.waiters = self.waiters[:]
            s.delivered = self.delivered[:]
            s._shared = self._shared = (1 << self.players) - 1
        s.deciding = self.deciding
        s._turns = None
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

    def _own(self, seat: int) -> None:
        """Gives this state its own copy of a seat's lists before it changes them."""
        self.hand_ings[seat] = self.hand_ings[seat][:]
        self.hand_orders[seat] = self.hand_orders[seat][:]
        self.waiters[seat] = self.waiters[seat][:]
        self.delivered[seat] = self.delivered[seat][:]
        self._shared &= ~(1 << seat)

    def _own_rng(self) -> random.Random:
        """Returns this state's generator, first made its own if copies share it."""
        if self._rng_shared:
            rng = random.Random()
            rng.setstate(self._rng.getstate())
            self._rng = rng
            self._rng_shared = False
        return self._rng

    def child(self, action: Action) -> State:
        """Returns a copy of this state with ``action`` applied; raises IllegalActionError.

        The child shares with this state the lists of the seats the action leaves
        alone (copy-on-write: each state copies a seat's lists before its own
        ``apply`` changes them). Like every public attribute they are not to be
        changed in place; ``copy()`` gives a state whose lists are all its own.
        """
        s = self._clone(False)
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
            if self._turns is not None:
                return self._turns  # asked before: search bots revisit their states
            seat = self.to_act
            assert seat is not None
            # The seat's context (see _CONTEXTS), then the block of each kind held.
            empty = not self.waiters[seat]
            orders = tuple(self.hand_orders[seat])
            blocks = _CONTEXTS[empty].get(orders)
            if blocks is None:
                blocks = _CONTEXTS[empty][orders] = [None] * 40
            # Written out kind by kind: this is the hottest loop of a random game.
            a, b, c, d, e = self.hand_ings[seat]
            legal: tuple[Turn, ...] = ()
            if a:
                legal = blocks[a] or _turn_block(blocks, empty, orders, a)
            if b:
                legal += blocks[8 + b] or _turn_block(blocks, empty, orders, 8 + b)
            if c:
                legal += blocks[16 + c] or _turn_block(blocks, empty, orders, 16 + c)
            if d:
                legal += blocks[24 + d] or _turn_block(blocks, empty, orders, 24 + d)
            if e:
                legal += blocks[32 + e] or _turn_block(blocks, empty, orders, 32 + e)
            self._turns = legal = legal or blocks[0] or _turn_block(blocks, empty, orders, 0)
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

        On error the state is unchanged. A turn that plays cards, the commonest action
        by far, is played here, a method call less for each; _apply_decision takes
        every other action (passes, resolution decisions, the wrong kind of action).
        """
        if self.phase != TURN or not isinstance(action, Turn) or action.ingredient is None:
            self._apply_decision(action)
            return
        # R-TURN-1/2: play cards of one kind, maybe an order on top, then refill.
        seat = self.to_act
        assert seat is not None
        if self._shared and self._shared >> seat & 1:
            self._own(seat)
        kind = action.ingredient
        ings = self.hand_ings[seat]
        orders = self.hand_orders[seat]
        order = action.order
        # Check everything first so that a refused action changes nothing.
        try:
            k = KIND_INDEX[kind]
        except KeyError:
            raise IllegalActionError(f"unknown ingredient {kind!r}", "R-COMP-1") from None
        count = action.count
        if type(count) is not int or count < 1:
            raise IllegalActionError(f"must play 1 or more cards, got count {count!r}", "R-TURN-1")
        if ings[k] < count:
            raise IllegalActionError(
                f"cannot play {count} {kind}: the hand holds {ings[k]}", "R-TURN-1"
            )
        need = HAND_LIMIT + count - sum(ings) - len(orders)  # cards to refill
        if order is not None:
            if order not in orders:
                raise IllegalActionError(f"order {order!r} is not in the hand", "R-TURN-2")
            need += 1
        draw = action.draw
        if need < 1 or (draw != SUPPLY and (draw != WAITER or not self.waiters[seat])):
            self._check_draw(seat, need, draw)  # raises unless a full hand draws nothing
        self._turns = None

        # Play onto the oven (R-TURN-1/2).
        ings[k] -= count
        oven = self.oven
        if count == 1:
            oven.append(kind)
        else:
            oven += [kind] * count
        if order is not None:
            orders.remove(order)
            oven.append(order)

        # Refill from one source (R-TURN-4).
        if draw == SUPPLY:
            supply = self.supply
            # Usual cases: the top cards are all ingredients and some remain. A single
            # card, the commonest draw, is looked at without slicing the supply.
            if need == 1 and len(supply) > 1 and supply[-1] != MAMMA_MIA:
                ings[KIND_INDEX[supply.pop()]] += 1
            else:
                top = supply[-need:]
                if len(supply) <= need or MAMMA_MIA in top:
                    drawn, mamma_mia = self._draw_supply(seat, need)
                    self._end_turn(
                        seat, ("turn", seat, kind, count, order, draw, drawn, mamma_mia), not supply
                    )
                    return
                del supply[-need:]
                kind_index = KIND_INDEX
                for card in top:
                    ings[kind_index[card]] += 1
        elif draw == WAITER:
            # Written out rather than a call to _draw_waiter: a third of all turns.
            waiter = self.waiters[seat]
            if need > len(waiter):
                need = len(waiter)
            orders += waiter[:need]
            del waiter[:need]
            orders.sort()
        else:
            need = 0
        self.events.append(("turn", seat, kind, count, order, draw, need, False))
        self.last_actor = seat
        self.stall = 0
        self.to_act = seat + 1 if seat + 1 < self.players else 0

    def _apply_decision(self, action: Action) -> None:
        """Applies an action that is not a turn playing cards (see ``apply``): a pass,
        or the owner's decision on the order being resolved; raises IllegalActionError,
        leaving the state unchanged, when it is not legal."""
        phase = self.phase
        if phase == TURN:
            if not isinstance(action, Turn):
                raise IllegalActionError(
                    f"a turn is asked, not a resolution decision: {action}", "R-TURN-1"
                )
            seat = self.to_act
            assert seat is not None
            if self._shared and self._shared >> seat & 1:
                self._own(seat)
            self._apply_pass(seat, action)
        elif phase == RESOLVE:
            if not isinstance(action, Resolve):
                raise IllegalActionError(
                    f"the owner of {self.deciding} must decide how to resolve it, not take a turn",
                    "R-RES-8",
                )
            # The options are interned and a caller usually hands one of them back:
            # look for the very object before comparing field by field.
            for option in self._options:
                if option is action:
                    break
            else:
                if action not in self._options:
                    raise IllegalActionError(self._resolve_fault(action), self._resolve_rule())
            # The decision is applied here rather than in a method of its own: a
            # call less for each of the many decisions of a resolution.
            card = self.deciding
            seat = self.to_act
            assert card is not None and seat is not None
            if action.bake:
                hand = action.hand
                if _RECIPES[card][0] == STANDARD:
                    # R-RES-4: the table gives what the hand does not add.
                    from_table = _minus(ORDERS[card].need, hand or _ZERO)
                else:
                    from_table = self._special_from_table(card, action)
                self._bake(card, seat, from_table, hand, action.ingredient, False)
            else:
                if self._shared >> seat & 1:
                    self._own(seat)
                self.waiters[seat].append(card)
                self.events.append(("fail", seat, card, True))
            self._advance()
        else:
            raise IllegalActionError("the game is over", "R-END-1")

    def _special_from_table(self, card: str, action: Resolve) -> Counts:
        """Returns the table cards, by kind, that baking the special order ``card`` as
        ``action`` takes: the recipe less the cards added from hand (R-RES-6/7), or the
        whole table for a Bombastica (R-RES-5)."""
        kind, p, _, _ = _RECIPES[card]
        hand = action.hand or _ZERO
        if kind == BOMBASTICA:
            return _counts(self.table)
        k = (
            KIND_INDEX[action.ingredient]
            if action.ingredient
            else _minimale_kinds(self.table, p)[0]
        )
        need = [0, 0, 0, 0, 0]
        need[p] = 1
        need[k] = 3 if kind == MINIMALE else 6
        return _minus(need, hand)

    def _apply_pass(self, seat: int, action: Turn) -> None:
        """Plays a turn of ``seat`` that plays no card (R-TURN-3): a hand without
        ingredients refills, unless it holds 7 orders; raises IllegalActionError,
        leaving the state unchanged, if it is not legal."""
        if any(self.hand_ings[seat]):
            raise IllegalActionError(
                "must play at least one ingredient card while holding one", "R-TURN-1"
            )
        if action.order is not None:
            raise IllegalActionError(
                f"a pass plays no order card, got {action.order!r}", "R-TURN-3"
            )
        need = HAND_LIMIT - len(self.hand_orders[seat])
        draw = action.draw
        self._check_draw(seat, need, draw)
        self._turns = None
        mamma_mia = round_over = False
        if draw == SUPPLY:
            drawn, mamma_mia = self._draw_supply(seat, need)
            round_over = not self.supply
        elif draw == WAITER:
            drawn = self._draw_waiter(seat, need)
        else:
            drawn = 0
        self._end_turn(seat, ("turn", seat, None, 0, None, draw, drawn, mamma_mia), round_over)

    def _check_draw(self, seat: int, need: int, draw: str | None) -> None:
        """Raises IllegalActionError unless a hand ``need`` cards short of 7 may refill
        from ``draw`` (R-TURN-4, R-TURN-5): a full hand draws nothing, any other one
        from the supply or a waiter with cards."""
        if need < 1:
            if draw is not None:
                raise IllegalActionError(
                    f"a hand of 7 draws nothing, got draw {draw!r}", "R-TURN-4"
                )
        elif draw == WAITER:
            if not self.waiters[seat]:
                raise IllegalActionError(
                    "cannot draw from an empty waiter while the supply has cards", "R-TURN-5"
                )
        elif draw != SUPPLY:
            raise IllegalActionError(
                f"a hand below 7 cards must draw from 'supply' or 'waiter', got {draw!r}",
                "R-TURN-4",
            )

    def _draw_supply(self, seat: int, need: int) -> tuple[int, bool]:
        """Draws ``need`` cards from the supply into ``seat``'s hand, laying the Mamma
        Mia! card aside (R-TURN-6) and stopping if the supply runs out (R-TURN-7);
        returns (ingredient cards drawn, whether the Mamma Mia! card was drawn)."""
        supply = self.supply
        ings = self.hand_ings[seat]
        drawn = 0
        mamma_mia = False
        while need > 0 and supply:
            card = supply.pop()
            if card == MAMMA_MIA:
                self.holder = seat
                mamma_mia = True
                continue
            ings[KIND_INDEX[card]] += 1
            drawn += 1
            need -= 1
        return drawn, mamma_mia

    def _draw_waiter(self, seat: int, need: int) -> int:
        """Moves up to ``need`` orders from the top of ``seat``'s waiter into its hand
        (R-TURN-4); returns how many."""
        waiter = self.waiters[seat]
        if need > len(waiter):
            need = len(waiter)
        orders = self.hand_orders[seat]
        orders += waiter[:need]
        del waiter[:need]
        orders.sort()
        return need

    def _end_turn(self, seat: int, event: tuple[Any, ...], round_over: bool) -> None:
        """Records the turn ``event`` of ``seat`` and passes play on, or ends the round
        when the supply has run out (``round_over``, R-TURN-7) or a full circle of
        passes drew nothing (R-TURN-8)."""
        self.events.append(event)
        self.last_actor = seat
        if event[2] is None and event[5] is None:  # played and drew nothing
            self.stall += 1
            if self.stall >= self.players:
                self.events.append(("round_end", self.round, True))
                self._start_resolution()
                return
        else:
            self.stall = 0
            if round_over:
                self.events.append(("round_end", self.round, False))
                self._start_resolution()
                return
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
        oven_kind = _OVEN_KIND
        reveal = self._reveal
        # Nothing below changes the oven, so it can be walked by a for loop.
        for card in oven[reveal:] if reveal else oven:
            reveal += 1
            k = oven_kind[card]
            if k >= 0:
                table[k] += 1
                continue
            seat = self._owner[card]
            kind, _, pairs, cards = _RECIPES[card]
            auto: Counts | None = None
            options: tuple[Resolve, ...] = ()
            if kind == STANDARD:
                # R-RES-4, checked here rather than in a method as it is the commonest
                # order: baked when the table holds the recipe, else the owner may add
                # every missing card from hand, or none.
                have = self.hand_ings[seat]
                missing: list[int] | None = None
                for k, n in pairs:
                    short = n - table[k]
                    if short > 0:
                        if have[k] < short:
                            break  # the hand cannot make it up: it fails
                        if missing is None:
                            missing = [0, 0, 0, 0, 0]
                        missing[k] = short
                else:
                    if missing is None:
                        # The table holds the recipe: baked unasked (R-RES-8), as
                        # _bake would, written out for the commonest bake.
                        if self._shared >> seat & 1:
                            self._own(seat)
                        for k, n in pairs:
                            table[k] -= n
                        self.used += cards
                        self.delivered[seat].append(card)
                        self.events.append(
                            ("bake", seat, card, None, None, True, ORDERS[card].need)
                        )
                        continue
                    else:
                        options = _standard_asks(_counts(missing))
            else:
                auto, options = self._special_options(card, seat)
            if auto is not None:
                self._bake(card, seat, auto, None, None, True)
            elif options:
                self._reveal = reveal
                self.deciding = card
                self._options = options
                self.to_act = seat
                return
            else:
                if self._shared >> seat & 1:
                    self._own(seat)
                self.waiters[seat].append(card)  # R-RES-9: fails, to the waiter's bottom
                self.events.append(("fail", seat, card, False))
        self._reveal = reveal
        self.deciding = None
        self._options = ()
        del oven[:]
        self._end_round()

    def _special_options(self, card: str, seat: int) -> tuple[Counts | None, tuple[Resolve, ...]]:
        """Returns, for a special order (standard ones are checked in _advance),
        (table cards to bake with at once, or None; the owner's options, declining
        last, or none).

        Per R-RES-8 an order the table completes with no choice bakes at once; the
        owner is asked only when a choice exists; no options means it fails.
        """
        kind, p, _, _ = _RECIPES[card]
        table = self.table
        have = self.hand_ings[seat]
        if kind == BOMBASTICA:
            # R-RES-5: 15 on the table take all of it; fewer, any cards from hand that
            # make up exactly 15.
            on_table = sum(table)
            if on_table >= BOMBASTICA_SIZE:
                return _counts(table), ()
            short = BOMBASTICA_SIZE - on_table
            if sum(have) < short:
                return None, ()
            # No choice adds more than ``short`` cards of a kind, so the options depend
            # only on the hand's counts capped at ``short``: fewer keys, a warmer cache.
            if max(have) > short:
                have = [n if n < short else short for n in have]
            key = (short, *have)
            asks = _BOMBASTICA_ASKS.get(key)
            if asks is None:
                asks = _BOMBASTICA_ASKS[key] = (
                    *(_resolve(None, _counts(c)) for c in _sub_multisets(have, short)),
                    _DECLINE,
                )
            return None, asks
        others = _OTHER_KINDS[p]
        if kind == MINIMALE:
            # R-RES-6: "?" is a kind other than the personal one with the lowest
            # non-zero count on the table (as _minimale_kinds, in one pass).
            low = 0
            lowest: list[int] = []
            for k in others:
                t = table[k]
                if t:
                    if not low or t < low:
                        low = t
                        lowest = [k]
                    elif t == low:
                        lowest.append(k)
            if not low:
                return None, ()
            kinds: Sequence[int] = lowest
            size = 3
        else:
            assert kind == MONOTONI
            kinds = others  # R-RES-7: "J" is any other kind
            size = 6
        need_p = 0 if table[p] else 1
        if need_p > have[p]:
            return None, ()  # no recipe can have its personal card
        single = len(kinds) == 1
        options = []
        for k in kinds:
            need_k = size - table[k] if table[k] < size else 0
            if need_k <= have[k]:
                if need_p or need_k:
                    options.append(_special_ask(single, p, need_p, k, need_k))
                elif single:
                    # The only "?" and every card on the table: baked unasked (R-RES-8).
                    recipe = [0, 0, 0, 0, 0]
                    recipe[p] = 1
                    recipe[k] = size
                    return _counts(recipe), ()
                else:
                    options.append(_resolve(INGREDIENTS[k], None))
        if not options:
            return None, ()
        return None, (*options, _DECLINE)

    def _resolve_rule(self) -> str:
        kind = ORDERS[self.deciding].kind if self.deciding else STANDARD
        return {
            STANDARD: "R-RES-4",
            BOMBASTICA: "R-RES-5",
            MINIMALE: "R-RES-6",
            MONOTONI: "R-RES-7",
        }[kind]

    def _resolve_fault(self, action: Resolve) -> str:
        allowed = "; ".join(str(o) for o in self._options)
        return f"{action} is not a way to resolve {self.deciding}: choose one of: {allowed}"

    def _bake(
        self,
        card: str,
        seat: int,
        from_table: Counts,
        hand: Counts | None,
        ingredient: str | None,
        auto: bool,
    ) -> None:
        if self._shared >> seat & 1:
            self._own(seat)
        table = self.table
        kind, _, pairs, cards = _RECIPES[card]
        # The used pile takes the recipe's cards kind by kind, the personal ingredient
        # first where the recipe names one (1 P + ...); the order matters because the
        # used pile is shuffled into the next supply.
        if kind == STANDARD:
            # The recipe is fixed: its cards in that order are precomputed.
            if hand is None:
                for k, n in pairs:
                    table[k] -= n
            else:
                have = self.hand_ings[seat]
                for k, n in pairs:
                    table[k] -= n - hand[k]
                    have[k] -= hand[k]
            self.used += cards
        else:
            have = self.hand_ings[seat]
            used = self.used
            extra = hand or _ZERO
            for k in _USE_ORDER[card]:
                n = from_table[k] + extra[k]
                if n:
                    table[k] -= from_table[k]
                    have[k] -= extra[k]
                    used += [INGREDIENTS[k]] * n
        self.delivered[seat].append(card)
        self.events.append(
            (
                "bake",
                seat,
                card,
                ingredient,
                hand if hand is not None and any(hand) else None,
                auto,
                from_table,
            )
        )

    # -- rounds -------------------------------------------------------------------------

    def _end_round(self) -> None:
        if self.round >= ROUNDS:
            self.phase = OVER
            self.to_act = None
            self.events.append(("over",))
            return
        # R-NEXT-1: the table's leftovers become the new oven, in canonical order.
        oven: list[str] = []
        for name, n in zip(INGREDIENTS, self.table, strict=True):
            if n:
                oven += [name] * n
        self.oven = oven
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
                    f"({_describe(cards)}), got {_describe(new_supply)} (R-NEXT-2)",
                    "R-NEXT-2",
                )
        else:
            new_supply = cards
            _shuffle(self._own_rng(), new_supply)
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


def _checked_colours(players: int, colours: Sequence[str]) -> tuple[str, ...]:
    """Returns ``colours`` as a tuple; raises IllegalActionError (R-SETUP-1) unless they
    are ``players`` distinct colours of the game."""
    chosen = tuple(colours)
    if len(chosen) != players or len(set(chosen)) != players or not _COLOUR_SET.issuperset(chosen):
        raise IllegalActionError(
            f"colours must be {players} distinct colours of {list(COLOURS)}, got {list(chosen)!r}",
            "R-SETUP-1",
        )
    return chosen


def _describe(cards: Sequence[str]) -> str:
    """Returns a short count-by-card description of a pile, e.g. '3 salami, 1 mamma-mia'."""
    counts: dict[str, int] = {}
    for c in cards:
        counts[c] = counts.get(c, 0) + 1
    return ", ".join(f"{n} {c}" for c, n in sorted(counts.items())) or "no cards"


def new_game(
    players: int,
    seed: int = 0,
    colours: Sequence[str] | None = None,
    first_player: int | None = None,
) -> State:
    """Returns a new shuffled game for 2 to 5 players; raises IllegalActionError (R-SETUP-1)."""
    return State.new(players, seed, colours, first_player)
