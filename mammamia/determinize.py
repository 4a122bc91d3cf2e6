"""Determinization: a complete game sampled from what one seat knows (R-VIEW-*).

A seat sees its own hand and waiter, and the public history (R-VIEW-1/2); the
other hands, the order of the supply and of every waiter are hidden (R-VIEW-3).
Search over such a game plays out *determinizations*: complete games that the seat
cannot tell from the real one. ``Sampler(view).sample(rng)`` draws one and returns
it as a ``State`` reached by replaying the public history from a sampled deal and
sampled reshuffles (``state.deal``, ``state.reshuffles``), so every sample is a
game record that replays, action by action, to the very view the seat was given:
the sampler checks it, field by field, and draws again when it does not.

Only the view is read (its history, the seat's hand and waiter, the public facts),
never a state, so nothing hidden can reach a sample: two games that differ only
in what the seat cannot see give the same samples for the same generator.

What a sample respects, all of it implied by the view:

- **Counts** (R-TURN-9): every hand's number of ingredients and orders, every
  waiter's size and the supply's size, at every moment of the history.
- **Cards in play**: the ingredients of the game (R-SETUP-2) are dealt among the
  opening hands and the first supply; each later supply is exactly the used pile
  of the resolution before, plus what a stalemate left in the supply (R-NEXT-2);
  the supply is drawn from the top in the order of the public draws, each draw
  taking its public number of cards; the Mamma Mia! card lies in the draw that
  took it (R-TURN-6), or still in the supply.
- **Held cards**: every ingredient put onto the oven and every card added from a
  hand at a resolution was in that hand then (R-TURN-1, R-RES-4..7); a seat that
  passed held no ingredient (R-TURN-3: its public count was zero).
- **Questions asked** (R-RES-8): an owner who declined was asked, so its hand could
  complete the order then (a standard order's missing cards, or the missing cards
  for one of the kinds a Minimale or Monotoni allows); an order that failed without
  a question could not be completed from the hand (for every way of baking it, some
  missing kind was short in the hand). The owner asked now, when the view is not
  the asked seat's, could complete the order being decided. A Bombastica asks for
  a number of cards only, and hand sizes are public.
- **Orders** (R-SETUP-5, R-RES-9): each waiter is its colour's orders in a shuffled
  order, drawn from the top: an order first played when its owner had drawn *d*
  cards of its original waiter lies in the top *d*; a failed order goes under the
  waiter, in the order of failing, and is drawn from there (so an order drawn back
  is known to be in its owner's hand); the seat's own hand and waiter are as the
  view shows them.

How: one pass over the history (``_Trace``) turns it into operations per seat
(cards drawn, cards put in, cards held or lacked), and a pass backwards sets, after
each draw, what the seat must hold later and how many cards it may still draw
before (``_snapshots``). A sample walks the operations forwards and draws each card
when it was drawn, from what that supply still holds, among the kinds that leave
the seat able to do all it is later seen doing and leave the other seats the cards
they must still draw this round (Hall's condition over the sets of kinds); a walk
that still runs into a dead end goes back a few draws, then starts again.

What it leaves out:

- **The seat's own past hands.** A view holds the seat's hand now, not the cards it
  drew earlier (a bot could record them, the view does not); the seat's earlier
  hands are sampled like anyone's, consistent with its plays and its hand now.
- **Exact posterior weights.** Each card is drawn in proportion to the cards of
  its kind the supply holds, among the kinds that keep the history possible; that
  is close to, but not exactly, drawing uniformly among all the deals consistent
  with the view. Players' choices are taken to say nothing beyond what they make
  certain (no model of how likely an opponent was to play what it played).

A sample costs a few milliseconds (its walk, and one replay of the history through
the engine); ``Sampler`` does the public bookkeeping once per view, so draw many
samples from one sampler, and ``variant`` re-deals only the supply's undrawn order
and the waiters of the last sample, for a fraction of that.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Final

from .actions import SUPPLY, WAITER, Action, Counts, Resolve, Turn
from .cards import (
    BOMBASTICA,
    COPIES_PER_KIND,
    DEALT_INGREDIENTS,
    HAND_LIMIT,
    INGREDIENTS,
    KIND_INDEX,
    MAMMA_MIA,
    MINIMALE,
    MONOTONI,
    ORDERS,
    ORDERS_BY_COLOUR,
    REMOVED_PER_KIND,
    STANDARD,
)
from .errors import IllegalActionError, MammaMiaError, RecordError
from .state import RESOLVE, State
from .views import Event, View, public_events

__all__ = ["DeterminizationError", "Sampler", "determinize"]

_ATTEMPTS: Final = 200
"""How many times ``sample`` draws before giving up (a draw is rarely refused)."""

_ORIGINAL_WAITER: Final = 8

# The operations of the sampler's randomised walk over the history.
_START, _ROUND, _DRAW, _REMOVE, _HAS, _HAS_ANY, _LACKS = range(7)


class DeterminizationError(MammaMiaError):
    """A view the sampler cannot sample from: not a seat's view, a history that does
    not add up, or (very rarely) no consistent sample found in the attempts allowed."""


class _DeadEnd(Exception):
    """A randomised choice of the walk left no consistent way on: draw again."""


def determinize(view: View, rng: random.Random | int | None = None) -> State:
    """Returns one complete game consistent with ``view`` (see the module docstring).

    ``rng`` is a generator or a seed; the same view and seed give the same sample.
    Raises DeterminizationError for a view it cannot sample from.
    """
    if not isinstance(rng, random.Random):
        rng = random.Random(rng)
    return Sampler(view).sample(rng)


class Sampler:
    """Draws determinizations of one seat's view; the public bookkeeping is done once.

    ``attempts`` and ``rejected`` count the draws made and those refused (a random
    choice that led nowhere, or a replay that did not give the view back).
    """

    def __init__(self, view: View) -> None:
        if view.seat is None:
            raise DeterminizationError("a spectator's view has no seat to sample for")
        self.view = view
        self.attempts = 0
        self.rejected = 0
        self._last: _Walk | None = None
        _Trace(view, self)
        self.draws, self.deals = _snapshots(self)
        self._next_draws()

    # Filled in by _Trace:
    players: int
    colours: tuple[str, ...]
    me: int
    first_player: int
    deck: list[int]
    ops: list[tuple[Any, ...]]
    actions: list[tuple[int, Any]]
    rounds: int
    deadlines: list[dict[str, int]]
    originals_drawn: list[int]
    own_hand_originals: list[str]
    history_key: list[tuple[Any, ...]]
    draws: dict[int, _Snapshot]
    deals: list[_Snapshot]
    next_draw: list[list[int]]
    removed: list[list[Counts]]
    round_at: list[int]

    def _next_draws(self) -> None:
        """Sets, per seat and op index ``j``, the index of the seat's first draw at or
        after ``j`` (or -1) and the cards it removed before ``j``."""
        ops = self.ops
        self.round_at = []
        rnd = 1
        for op in ops:
            if op[0] == _ROUND:
                rnd = op[1]
            self.round_at.append(rnd)
        self.next_draw = []
        self.removed = []
        for seat in range(self.players):
            nxt = [-1] * (len(ops) + 1)
            for j in range(len(ops) - 1, -1, -1):
                op = ops[j]
                nxt[j] = j if op[0] == _DRAW and op[1] == seat else nxt[j + 1]
            total = [0, 0, 0, 0, 0]
            removed = []
            for op in ops:
                removed.append(_counts(total))
                if op[0] == _REMOVE and op[1] == seat:
                    for k in range(5):
                        total[k] += op[2][k]
            removed.append(_counts(total))
            self.next_draw.append(nxt)
            self.removed.append(removed)

    def sample(self, rng: random.Random, attempts: int = _ATTEMPTS) -> State:
        """Returns a sampled game consistent with the view; raises DeterminizationError
        when no consistent draw was found in ``attempts`` draws (with the default, it
        has not been seen to happen; most views take one or two)."""
        for _ in range(attempts):
            self.attempts += 1
            walk = _Walk(self, rng)
            try:
                walk.walk()
                walk.finish()
            except _DeadEnd:
                self.rejected += 1
                continue
            state = self._replay(*walk.build(), rng.getrandbits(64))
            if state is not None:
                self._last = walk
                return state
            self.rejected += 1
        raise DeterminizationError(
            f"no consistent determinization found in {attempts} "
            f"attempts (seat {self.me}, {len(self.view.history)} events)"
        )

    def variant(self, rng: random.Random) -> State:
        """Returns another sample that keeps the last one's cards drawn so far (so every
        hand's ingredients), at a fraction of the cost: the order of what the supply
        still holds (and where the Mamma Mia! card lies in it), every waiter's order and
        which unplayed orders are in hand are drawn again. The first call samples."""
        walk = self._last
        if walk is not None:
            state = self._replay(*walk.build(), rng.getrandbits(64))
            if state is not None:
                return state
        return self.sample(rng)

    def _replay(self, deal: dict[str, Any], reshuffles: list[list[str]], seed: int) -> State | None:
        """Returns the state the history reaches from the sampled start, or None when
        the history does not replay from it to the same public view."""
        try:
            state = State.new(
                self.players, seed, self.colours, self.first_player, deal, reshuffles or None
            )
            for seat, action in self.actions:
                if state.to_act != seat:
                    return None
                if isinstance(action, tuple):
                    action = _match_bake(state.legal_actions(), action)
                    if action is None:
                        return None
                state.apply(action)
        except (IllegalActionError, RecordError):
            return None
        if not self._same_view(state):
            return None
        return state

    def _same_view(self, state: State) -> bool:
        view = self.view
        me = self.me
        if (
            state.phase != view.phase
            or state.to_act != view.to_act
            or state.deciding != view.deciding
            or len(state.supply) != view.supply_size
            or tuple(state.hand_ings[me]) != tuple(view.hand)
            or tuple(sorted(state.hand_orders[me])) != tuple(sorted(view.hand_orders))
            or tuple(sorted(state.waiters[me])) != tuple(sorted(view.waiter))
            or state.holder != view.mamma_mia_holder
            or tuple(state.oven) != tuple(view.oven)
        ):
            return False
        if view.phase == RESOLVE and (
            state.revealed != view.revealed or tuple(state.table) != tuple(view.table)
        ):
            return False
        for info in view.seats:
            s = info.seat
            if (
                state.hand_size(s) != info.hand_size
                or len(state.hand_orders[s]) != info.orders_in_hand
                or len(state.waiters[s]) != info.waiter_size
                or tuple(state.delivered[s]) != tuple(info.delivered)
            ):
                return False
        return [_event_key(e) for e in public_events(state)] == self.history_key


def _match_bake(legal: Sequence[Action], want: tuple[Any, ...]) -> Action | None:
    """Returns the legal bake that a public ``baked`` event describes (the ``ingredient``
    is named in the action only when the owner had a choice of kind)."""
    _, ingredient, hand = want
    for option in legal:
        if (
            isinstance(option, Resolve)
            and option.bake
            and option.hand == hand
            and option.ingredient in (None, ingredient)
        ):
            return option
    return None


def _event_key(event: Event) -> tuple[Any, ...]:
    """Returns what a public event says, in a form that compares alike whether the view
    was built locally or from the network (a baked order names its kind only for the
    Minimale and the Monotoni)."""
    if event.kind == "baked":
        kind = ORDERS[event.order].kind if event.order in ORDERS else None
        ingredient = event.ingredient if kind in (MINIMALE, MONOTONI) else None
        return ("baked", event.seat, event.order, ingredient, event.hand, event.auto)
    if event.kind == "failed":
        return ("failed", event.seat, event.order, event.declined)
    if event.kind == "turn":
        return (
            "turn",
            event.seat,
            event.ingredient,
            event.count,
            event.order,
            event.draw,
            event.drawn,
            event.mamma_mia,
        )
    if event.kind == "round_started":
        return ("round_started", event.seat, event.round)
    if event.kind == "round_ended":
        return ("round_ended", event.round, event.stalemate)
    return (event.kind,)


def _counts(values: Sequence[int]) -> Counts:
    a, b, c, d, e = values
    return (a, b, c, d, e)


def _single(kind: int, count: int) -> Counts:
    values = [0, 0, 0, 0, 0]
    values[kind] = count
    return _counts(values)


def _minimale_kinds(table: Sequence[int], personal: int) -> list[int]:
    """Returns the kinds a Minimale's "?" may be (R-RES-6)."""
    present = [t for k, t in enumerate(table) if k != personal and t]
    if not present:
        return []
    low = min(present)
    return [k for k, t in enumerate(table) if k != personal and t == low]


def _special_needs(
    table: Sequence[int], personal: int, kinds: Sequence[int], size: int
) -> list[Counts]:
    """Returns, per allowed kind, the cards a Minimale/Monotoni lacks on the table."""
    out = []
    for k in kinds:
        need = [0, 0, 0, 0, 0]
        need[personal] = max(0, 1 - table[personal])
        need[k] = max(0, size - table[k])
        out.append(_counts(need))
    return out


class _Trace:
    """Walks the public history once: the counts at every moment, the operations of
    the randomised walk, the actions to replay, and the waiters' deadlines."""

    def __init__(self, view: View, out: Sampler) -> None:
        n = view.players
        if not 2 <= n <= 5 or len(view.colours) != n:
            raise DeterminizationError(f"a view of {n} players with colours {view.colours!r}")
        assert view.seat is not None
        me = view.seat
        self.out = out
        out.players = n
        out.colours = tuple(view.colours)
        out.me = me
        seat_of = {c: i for i, c in enumerate(view.colours)}
        self.seat_of = seat_of
        copies = COPIES_PER_KIND - REMOVED_PER_KIND[n]
        out.deck = [copies] * 5
        ops: list[tuple[Any, ...]] = []
        actions: list[tuple[int, Any]] = []
        out.ops, out.actions = ops, actions
        out.history_key = [_event_key(e) for e in view.history]
        self.ings = [0] * n
        self.orders = [0] * n
        self.supply = 0
        self.oven: list[str] = []
        self.table = [0, 0, 0, 0, 0]
        self.used = [0, 0, 0, 0, 0]
        self.holder: int | None = None
        self.reveal = 0
        self.resolving = False
        self.round = 0
        self.delivered: list[list[str]] = [[] for _ in range(n)]
        # Waiters: originals drawn, originals left, failed orders under them (in order),
        # orders drawn back from under them and still in hand.
        self.drawn = [0] * n
        self.left = [0] * n
        self.under: list[list[str]] = [[] for _ in range(n)]
        self.back: list[list[str]] = [[] for _ in range(n)]
        out.deadlines = [{} for _ in range(n)]
        out.first_player = -1
        for event in view.history:
            self._event(event, ops, actions)
        if self.round == 0:
            raise DeterminizationError("the history does not start with round 1")
        out.rounds = self.round
        self._check(view)
        out.ops = _narrow(ops)
        out.originals_drawn = list(self.drawn)
        # The seat's own orders: those in hand not drawn back came from the top of
        # the original waiter; its waiter's originals are those not under it.
        back = list(self.back[me])
        own_hand = []
        for card in view.hand_orders:
            if card in back:
                back.remove(card)
            else:
                own_hand.append(card)
        under = list(self.under[me])
        own_waiter = []
        for card in sorted(view.waiter):
            if card in under:
                under.remove(card)
            else:
                own_waiter.append(card)
        if back or under or len(own_waiter) != self.left[me]:
            raise DeterminizationError("the seat's hand and waiter do not match its history")
        out.own_hand_originals = own_hand

    def _check(self, view: View) -> None:
        if self.supply != view.supply_size:
            raise DeterminizationError(
                f"the history leaves a supply of {self.supply} cards, "
                f"the view shows {view.supply_size}"
            )
        for info in view.seats:
            s = info.seat
            if (
                self.ings[s] != info.ingredients_in_hand
                or self.orders[s] != info.orders_in_hand
                or self.left[s] + len(self.under[s]) != info.waiter_size
                or tuple(self.delivered[s]) != tuple(info.delivered)
            ):
                raise DeterminizationError(f"the history does not give seat {s}'s public counts")
        if tuple(self.oven) != tuple(view.oven):
            raise DeterminizationError("the history does not give the view's oven")
        if view.phase == RESOLVE:
            if not self.resolving or self.oven[self.reveal] != view.deciding:
                raise DeterminizationError("the history does not reach the order decided now")
            if tuple(self.table) != tuple(view.table):
                raise DeterminizationError("the history does not give the view's table")
            if view.to_act is not None and view.to_act != self.out.me:
                # The owner asked now could complete the order (R-RES-8).
                self._asked(view.deciding, view.to_act, self.out.ops)
        if sum(view.hand) != self.ings[self.out.me]:
            raise DeterminizationError("the seat's hand does not match its public count")

    def _event(
        self, event: Event, ops: list[tuple[Any, ...]], actions: list[tuple[int, Any]]
    ) -> None:
        kind = event.kind
        n = self.out.players
        if kind == "round_started":
            self._end_resolution()
            if event.round == 1:
                if self.round:
                    raise DeterminizationError("round 1 starts twice")
                self.out.first_player = event.seat if event.seat is not None else 0
                self.supply = sum(self.out.deck) - DEALT_INGREDIENTS * n + 1
                self.ings = [DEALT_INGREDIENTS] * n
                self.orders = [1] * n
                self.drawn = [1] * n
                self.left = [_ORIGINAL_WAITER - 1] * n
                ops.append((_START,))
            else:
                if event.round != self.round + 1:
                    raise DeterminizationError(f"round {event.round} follows round {self.round}")
                # R-NEXT-1/2: the table's leftovers are the new oven; the used pile, the
                # Mamma Mia! card and any supply left make the new supply.
                self.oven = [INGREDIENTS[k] for k in range(5) for _ in range(self.table[k])]
                leftover = self.supply - (0 if self.holder is not None else 1)
                ops.append((_ROUND, event.round, _counts(self.used), leftover))
                self.supply = sum(self.used) + leftover + 1
            self.round = event.round
            self.holder = None
            self.resolving = False
            self.table = [0, 0, 0, 0, 0]
            self.used = [0, 0, 0, 0, 0]
            return
        if self.round == 0:
            raise DeterminizationError(f"a {kind!r} event before round 1 started")
        if kind == "turn":
            self._turn(event, ops, actions)
        elif kind == "round_ended":
            self.resolving = True
            self.reveal = 0
            self.table = [0, 0, 0, 0, 0]
            self.used = [0, 0, 0, 0, 0]
            self._advance()
        elif kind in ("baked", "failed"):
            self._resolved(event, ops, actions)
        elif kind == "game_over":
            self._end_resolution()

    def _turn(
        self, event: Event, ops: list[tuple[Any, ...]], actions: list[tuple[int, Any]]
    ) -> None:
        s = event.seat
        if s is None or self.resolving:
            raise DeterminizationError("a turn without a seat, or during a resolution")
        actions.append((s, Turn(event.ingredient, event.count, event.order, event.draw)))
        if event.ingredient is not None:
            k = KIND_INDEX[event.ingredient]
            if event.count < 1 or event.count > self.ings[s]:
                raise DeterminizationError(
                    f"seat {s} plays {event.count} of {self.ings[s]} ingredients"
                )
            ops.append((_REMOVE, s, _single(k, event.count)))
            self.ings[s] -= event.count
            self.oven.extend([event.ingredient] * event.count)
        if event.order is not None:
            card = event.order
            if card not in ORDERS or self.seat_of.get(ORDERS[card].colour) != s:
                raise DeterminizationError(f"seat {s} plays {card!r}, not one of its orders")
            self.orders[s] -= 1
            self.oven.append(card)
            if card in self.back[s]:
                self.back[s].remove(card)
            elif card in self.out.deadlines[s]:
                raise DeterminizationError(f"{card} played again without being drawn back")
            else:
                self.out.deadlines[s][card] = self.drawn[s]
        if event.draw == SUPPLY:
            mm = bool(event.mamma_mia)
            ops.append((_DRAW, s, event.drawn, mm))
            self.ings[s] += event.drawn
            self.supply -= event.drawn + mm
            if mm:
                self.holder = s
        elif event.draw == WAITER:
            count = event.drawn
            fresh = min(count, self.left[s])
            self.left[s] -= fresh
            self.drawn[s] += fresh
            rest = count - fresh
            if rest > len(self.under[s]):
                raise DeterminizationError(f"seat {s} draws more orders than its waiter holds")
            self.back[s].extend(self.under[s][:rest])
            del self.under[s][:rest]
            self.orders[s] += count
        if self.supply < 0:
            raise DeterminizationError("the history draws more cards than the supply holds")

    def _advance(self) -> None:
        """Turns up oven ingredients until the next order (or the oven's end)."""
        oven = self.oven
        while self.reveal < len(oven) and oven[self.reveal] in KIND_INDEX:
            self.table[KIND_INDEX[oven[self.reveal]]] += 1
            self.reveal += 1

    def _end_resolution(self) -> None:
        if self.resolving:
            self._advance()
            if self.reveal != len(self.oven):
                raise DeterminizationError("a round ends before its oven is resolved")
            self.resolving = False

    def _resolved(
        self, event: Event, ops: list[tuple[Any, ...]], actions: list[tuple[int, Any]]
    ) -> None:
        card = event.order
        if (
            not self.resolving
            or self.reveal >= len(self.oven)
            or card is None
            or self.oven[self.reveal] != card
        ):
            raise DeterminizationError(f"{card!r} is resolved out of the oven's order")
        self.reveal += 1
        order = ORDERS[card]
        s = self.seat_of[order.colour]
        table = self.table
        p = order.personal
        if event.kind == "failed":
            if event.declined:
                actions.append((s, Resolve(False)))
                self._asked(card, s, ops)
            else:
                self._unasked(card, s, ops)
            self.under[s].append(card)  # R-RES-9
            self._advance()
            return
        hand = event.hand
        if not event.auto:
            actions.append((s, ("bake", event.ingredient, hand)))
        if hand is not None:
            if sum(hand) > self.ings[s]:
                raise DeterminizationError(f"seat {s} adds more cards than it holds")
            ops.append((_REMOVE, s, hand))
            self.ings[s] -= sum(hand)
        added = hand or (0, 0, 0, 0, 0)
        if order.kind == BOMBASTICA:
            from_table = list(table)
        else:
            if order.kind == STANDARD:
                need = list(order.need)
            else:
                size = 3 if order.kind == MINIMALE else 6
                if event.ingredient is not None:
                    x = KIND_INDEX[event.ingredient]
                elif order.kind == MINIMALE and _minimale_kinds(table, p):
                    x = _minimale_kinds(table, p)[0]
                else:
                    raise DeterminizationError(f"{card} baked without naming its kind")
                need = [0, 0, 0, 0, 0]
                need[p] = 1
                need[x] = size
            from_table = [need[k] - added[k] for k in range(5)]
        for k in range(5):
            if from_table[k] < 0 or from_table[k] > table[k]:
                raise DeterminizationError(f"{card} bakes with cards not on the table")
            table[k] -= from_table[k]
            self.used[k] += from_table[k] + added[k]
        self.delivered[s].append(card)
        self._advance()

    def _options(self, card: str) -> list[Counts] | None:
        """Returns the cards the order lacks per way of baking it (None: the hand plays
        no part, as a Bombastica's count of cards is public)."""
        order = ORDERS[card]
        table = self.table
        p = order.personal
        if order.kind == STANDARD:
            return [_counts([max(0, n - t) for n, t in zip(order.need, table, strict=True)])]
        if order.kind == BOMBASTICA:
            return None
        if order.kind == MINIMALE:
            return _special_needs(table, p, _minimale_kinds(table, p), 3)
        return _special_needs(table, p, [k for k in range(5) if k != p], 6)

    def _asked(self, card: str, seat: int, ops: list[tuple[Any, ...]]) -> None:
        """The owner was asked: its hand could complete the order one way (R-RES-8)."""
        options = self._options(card)
        if options is None or any(not any(o) for o in options):
            return
        if len(options) == 1:
            ops.append((_HAS, seat, options[0]))
        else:
            ops.append((_HAS_ANY, seat, tuple(options)))

    def _unasked(self, card: str, seat: int, ops: list[tuple[Any, ...]]) -> None:
        """The order failed without a question: no way of baking it was in the hand."""
        options = self._options(card)
        if options:
            ops.append((_LACKS, seat, tuple(options)))


def _narrow(ops: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Returns the operations with each failure without a question narrowed to the
    kinds it may blame: a kind the hand is later seen to have held enough of then
    (it puts more of it in, or is found holding more, than it could have drawn
    since) was not the short one, so the need for it is dropped."""
    out: list[tuple[Any, ...]] = []
    for j, op in enumerate(ops):
        if op[0] != _LACKS:
            out.append(op)
            continue
        seat = op[1]
        held = [0, 0, 0, 0, 0]  # at least this many of each kind held then
        removed = [0, 0, 0, 0, 0]
        drawn = 0
        for later in ops[j + 1 :]:
            code = later[0]
            if code not in (_DRAW, _REMOVE, _HAS) or later[1] != seat:
                continue
            if code == _DRAW:
                drawn += later[2]
                continue
            counts = later[2]
            for k in range(5):
                if code == _REMOVE:
                    removed[k] += counts[k]
                    held[k] = max(held[k], removed[k] - drawn)
                else:
                    held[k] = max(held[k], removed[k] + counts[k] - drawn)
        narrowed = []
        for need in op[2]:
            kept = [need[k] if held[k] < need[k] else 0 for k in range(5)]
            narrowed.append(_counts(kept) if any(kept) else need)
        out.append((_LACKS, seat, tuple(narrowed)))
    return out


# -- the lookahead: what each seat must still hold, from the public history ----------

# A seat's future, seen from just after one of its draws (or its deal), as
# checkpoints on its hand ``h`` then, where ``d`` more cards may still be drawn
# before the checkpoint (``later``: of those, the ones drawn in a later round):
#   need  (req, d, now, after, afters): the hand then holds ``req``: the sum of
#         (req - h)+ is at most ``d``, and of each kind at most what this round's
#         ``now`` draws can find in the supply plus ``after``, what later rounds' can
#         (``afters``: the same after each round).
#   any   ((req, ...), d, later): one of the ``req`` is held then.
#   lacks ((k, thr), ...): the hand then is short of one kind: some h[k] < thr.
#   upper thr: the hand now is the view's: h[k] <= thr[k] for every kind.
_Snapshot = tuple[
    tuple[tuple[Counts, int, int, Counts, tuple[Counts, ...]], ...],
    tuple[tuple[tuple[Counts, ...], int, tuple[int, ...]], ...],
    tuple[tuple[tuple[int, int], ...], ...],
    Counts | None,
]


def _snapshots(sampler: Sampler) -> tuple[dict[int, _Snapshot], list[_Snapshot]]:
    """Returns, per draw (by op index) and per seat's deal, the seat's checkpoints
    after it. Built backwards once per view; dominated checkpoints are dropped."""
    n = sampler.players
    me = sampler.me
    rounds_at: list[int] = []
    rnd = 1
    for op in sampler.ops:
        if op[0] == _ROUND:
            rnd = op[1]
        rounds_at.append(rnd)
    pools: dict[int, list[int]] = {1: list(sampler.deck)}  # what each supply may hold
    for op in sampler.ops:
        if op[0] == _ROUND:
            pools[op[1]] = [op[2][k] + op[3] for k in range(5)]
    draws: dict[int, _Snapshot] = {}
    deals: list[_Snapshot] = []
    memo: dict[tuple[int, ...], tuple[Counts, ...]] = {}
    for seat in range(n):
        needs: list[list[Any]] = []  # [req list, d, [draws in rounds 1..3]]
        anys: list[list[Any]] = []  # [[req lists], d, [draws in rounds]]
        lacks: list[list[list[int]]] = []  # [[k, thr], ...]
        upper: list[int] | None = None
        fixed = 0
        if seat == me:
            hand = list(sampler.view.hand)
            needs.append([hand[:], 0, [0, 0, 0, 0]])
            upper = hand[:]
            fixed = 1  # the hand now is kept however far away
        deal: _Snapshot | None = None
        for j in range(len(sampler.ops) - 1, -1, -1):
            op = sampler.ops[j]
            code = op[0]
            if code == _START:
                deal = _freeze(needs, anys, lacks, upper, 1, pools, memo)
                continue
            if code == _ROUND or op[1] != seat:
                continue
            if code == _REMOVE:
                counts = op[2]
                for need in needs:
                    req = need[0]
                    for k in range(5):
                        req[k] += counts[k]
                for any_ in anys:
                    for req in any_[0]:
                        for k in range(5):
                            req[k] += counts[k]
                for lack in lacks:
                    for pair in lack:
                        pair[1] += counts[pair[0]]
                if upper is not None:
                    for k in range(5):
                        upper[k] += counts[k]
                # A lack some kind of which needs more cards than a hand holds is met.
                lacks = [lack for lack in lacks if all(thr <= HAND_LIMIT for _, thr in lack)]
                _need(needs, counts, fixed)
            elif code == _HAS:
                _need(needs, op[2], fixed)
            elif code == _HAS_ANY:
                anys.append([[list(o) for o in op[2]], 0, [0, 0, 0, 0]])
            elif code == _LACKS:
                for need_ in op[2]:
                    lacks.append([[k, need_[k]] for k in range(5) if need_[k]])
            elif code == _DRAW:
                draws[j] = _freeze(needs, anys, lacks, upper, rounds_at[j], pools, memo)
                count = op[2]
                for need in needs:
                    need[1] += count
                    need[2][rounds_at[j]] += count
                for any_ in anys:
                    any_[1] += count
                    any_[2][rounds_at[j]] += count
        assert deal is not None
        deals.append(deal)
    return draws, deals


_HORIZON: Final = 20
"""How many of a seat's future stretches between draws its lookahead keeps."""


def _need(needs: list[list[Any]], counts: Sequence[int], fixed: int) -> None:
    """Adds a requirement met just before the nearest draw, merged with those there
    (checkpoints with no draw between them are met by one hand, so the larger count
    of each kind), keeping the nearest ``_HORIZON`` stretches (and the ``fixed`` first)."""
    if len(needs) > fixed and needs[-1][1] == 0:
        top = needs[-1][0]
        for k in range(5):
            if counts[k] > top[k]:
                top[k] = counts[k]
        return
    needs.append([list(counts), 0, [0, 0, 0, 0]])
    if len(needs) > _HORIZON + fixed:
        del needs[fixed]


def _freeze(
    needs: list[list[Any]],
    anys: list[list[Any]],
    lacks: list[list[list[int]]],
    upper: list[int] | None,
    rnd: int,
    pools: dict[int, list[int]],
    memo: dict[tuple[int, ...], tuple[Counts, ...]],
) -> _Snapshot:
    """Returns the checkpoints as tuples. Checkpoints with the same draws before them
    lie between the same two draws, where the hand only loses cards: one hand meets
    them all, so they merge (the larger count of each kind; each choice of an ``any``
    merged with them). Those that can never bind, or that another implies (a larger
    requirement with no more draws before it), are dropped."""
    merged: dict[int, tuple[list[int], list[int]]] = {}
    for req, d, by_round in needs:
        if d in merged:
            top = merged[d][0]
            for k in range(5):
                if req[k] > top[k]:
                    top[k] = req[k]
        else:
            merged[d] = (list(req), by_round)
    kept: list[tuple[Counts, int, int, Counts, tuple[Counts, ...]]] = []
    for req, d, by_round in sorted(
        ((_counts(r), d, b) for d, (r, b) in merged.items() if sum(r) > d),
        key=lambda c: (c[1], -sum(c[0])),
    ):
        if not any(
            d2 <= d and all(a >= b for a, b in zip(r2, req, strict=True)) for r2, d2, *_ in kept
        ):
            # At most this many of each kind can come from the supplies of the rounds
            # after each round, whose cards are known but for a stalemate's leftovers.
            key = tuple(by_round)
            after = memo.get(key)
            if after is None:
                after = memo[key] = tuple(
                    _counts(
                        [
                            sum(
                                min(by_round[r2], pools[r2][k])
                                for r2 in range(r + 1, 4)
                                if by_round[r2]
                            )
                            for k in range(5)
                        ]
                    )
                    for r in range(4)
                )
            kept.append((req, d, d - sum(by_round[rnd + 1 :]), after[rnd], after))
    choices = []
    for reqs, d, by_round in anys:
        with_needs = []
        base = merged.get(d, ([0, 0, 0, 0, 0], by_round))[0]
        for r in reqs:
            with_needs.append(_counts([max(a, b) for a, b in zip(r, base, strict=True)]))
        choices.append((tuple(with_needs), d, tuple(sum(by_round[r + 1 :]) for r in range(4))))
    return (
        tuple(kept),
        tuple(choices),
        tuple(tuple((k, thr) for k, thr in lack) for lack in lacks),
        _counts(upper) if upper is not None else None,
    )


def _fits(h: Sequence[int], spare: int, snap: _Snapshot, left: Sequence[int]) -> bool:
    """Returns whether a hand ``h``, with ``spare`` cards still to come in this draw
    and ``left`` in the supply, can meet every checkpoint of ``snap``."""
    needs, anys, lacks, upper = snap
    for req, d, now, after, _ in needs:
        short = 0
        for k in range(5):
            x = req[k] - h[k]
            if x > 0:
                short += x
                if x > min(now + spare, left[k]) + after[k]:
                    return False
        if short > d + spare:
            return False
    for reqs, d, _ in anys:
        if not any(sum(max(0, r[k] - h[k]) for k in range(5)) <= d + spare for r in reqs):
            return False
    for lack in lacks:
        for k, thr in lack:
            if h[k] < thr:
                break
        else:
            return False
    if upper is not None:
        for k in range(5):
            if h[k] > upper[k]:
                return False
    return True


def _allowed(h: Sequence[int], spare: int, snap: _Snapshot, left: Sequence[int]) -> int:
    """Returns the kinds (a bit mask) of which one more card on hand ``h``, with
    ``spare`` more to come in this draw and ``left`` in the supply, keeps every
    checkpoint of ``snap`` within reach (``_fits`` for each kind, in one pass)."""
    needs, anys, lacks, upper = snap
    mask = 31
    for req, d, now, after, _ in needs:
        short = 0
        helps = 0
        for k in range(5):
            x = req[k] - h[k]
            if x > 0:
                short += x
                helps |= 1 << k
                bound = now + spare
                if x > min(bound, left[k]) + after[k]:
                    # Only a card of this kind can still keep it within reach.
                    if x - 1 <= min(bound, left[k] - 1) + after[k]:
                        mask &= 1 << k
                    else:
                        return 0
        room = d + spare - short
        if room < -1:
            return 0
        if room == -1:
            mask &= helps
        if not mask:
            return 0
    for lack in lacks:
        last = -1
        for k, thr in lack:
            if h[k] < thr:
                if last >= 0 or h[k] < thr - 1:
                    last = -2
                    break
                last = k
        if last == -1:
            return 0
        if last >= 0:
            mask &= ~(1 << last)
    if upper is not None:
        for k in range(5):
            if h[k] >= upper[k]:
                mask &= ~(1 << k)
    if anys and mask:
        hh = list(h)
        for k in range(5):
            if mask >> k & 1:
                hh[k] += 1
                if not _fits(hh, spare, snap, left):
                    mask &= ~(1 << k)
                hh[k] -= 1
    return mask


def _quick_caps(
    h: Sequence[int], count: int, snap: _Snapshot, left: Sequence[int]
) -> list[int] | None:
    """Returns, when no requirement of ``snap`` can bind during a draw of ``count``
    cards onto hand ``h`` (each is met without them, and no choice of cards can make
    a seat hold what it lacked except by more of one kind), the most cards of each
    kind the draw may take; None when the draw must check each card (``_fits``)."""
    needs, anys, lacks, upper = snap
    if anys:
        return None
    for req, d, now, after, _ in needs:
        short = 0
        for k in range(5):
            x = req[k] - h[k]
            if x > 0:
                short += x
                if x > min(now, left[k]) + after[k]:
                    return None
        if short > d:
            return None
    caps = [count] * 5
    if upper is not None:
        for k in range(5):
            caps[k] = min(caps[k], upper[k] - h[k])
    for lack in lacks:
        open_ = [(k, thr) for k, thr in lack if h[k] < thr]
        if len(open_) == 1:
            k, thr = open_[0]
            caps[k] = min(caps[k], thr - 1 - h[k])
        elif sum(thr - h[k] for k, thr in open_) <= count:
            return None
    return caps


def _sums(left: Sequence[int]) -> list[int]:
    """Returns, per set of kinds (a bit mask), how many cards of them ``left`` holds."""
    a, b, c, d, e = left
    ab = a + b
    low = [0, a, b, ab, c, a + c, b + c, ab + c]
    high = [0, d, e, d + e]
    return [h + x for h in high for x in low]


def _forced(h: Sequence[int], snap: _Snapshot, rnd: int) -> list[int]:
    """Returns, per kind, how many more cards of it the seat must draw in round
    ``rnd`` (from its hand ``h`` at the snapshot) to meet its checkpoints (of a
    choice of requirements, what every one it can still meet asks)."""
    out = [0, 0, 0, 0, 0]
    for req, d, _, _, afters in snap[0]:
        if d:
            after = afters[rnd]
            for k in range(5):
                x = req[k] - h[k] - after[k]
                if x > out[k]:
                    out[k] = x
    for reqs, d, later in snap[1]:
        if d:
            spare = later[rnd]
            least: list[int] | None = None
            for r in reqs:
                short = [max(0, r[k] - h[k]) for k in range(5)]
                if sum(short) <= d:
                    least = (
                        short
                        if least is None
                        else [min(a, b) for a, b in zip(least, short, strict=True)]
                    )
            for k in range(5):
                if least is not None and least[k] - spare > out[k]:
                    out[k] = least[k] - spare
    return out


class _Walk:
    """One randomised pass over the history: every card drawn is drawn then, from
    what its supply still holds, among the kinds that leave the seat able to do all
    it is later seen to do (``_Snapshot``) and leave the supply able to give every
    seat the cards it must still draw this round. A draw that finds no way on goes
    back to the draws before it (a few times each, within a budget)."""

    _TRIES: Final = 2
    _REDRAWS: Final = 3
    _BUDGET: Final = 24

    def __init__(self, sampler: Sampler, rng: random.Random) -> None:
        self.s = sampler
        self.rng = rng
        n = sampler.players
        self.pool = list(sampler.deck)
        self.hands = [[0, 0, 0, 0, 0] for _ in range(n)]
        self.snap: list[_Snapshot] = list(sampler.deals)
        self.at: list[list[int]] = [[0, 0, 0, 0, 0] for _ in range(n)]  # hand at snapshot
        self.round = 1
        self.forced = [_forced(self.at[s], self.snap[s], 1) for s in range(n)]
        self.dealt: list[list[int]] = [[] for _ in range(n)]
        self.segs: list[tuple[int, list[int], bool]] = []  # (round, kinds, Mamma Mia!)
        self.rests: list[list[int]] = []
        # Per seat: for each draw it has left this round, the most of each kind it may
        # take and its size (only the draws with a limit).
        self.pending: list[tuple[tuple[Counts, int], ...]] = [()] * n
        self.cache: dict[int, tuple[Any, list[int] | None]] = {}

    def walk(self) -> None:
        """Runs every operation, going back to earlier draws on a dead end; raises
        _DeadEnd when the budget of redraws is spent."""
        ops = self.s.ops
        n = self.s.players
        steps: list[tuple[int, int]] = []  # (op index, seat dealt or -1)
        for j, op in enumerate(ops):
            if op[0] == _START:
                steps.extend((j, seat) for seat in range(n))
            else:
                steps.append((j, -1))
        stack: list[list[Any]] = []  # [step, saved state, redraws]
        budget = self._BUDGET
        i = 0
        while i < len(steps):
            j, seat = steps[i]
            op = ops[j]
            drawing = seat >= 0 or op[0] == _DRAW
            if drawing and not (stack and stack[-1][0] == i):
                stack.append([i, self._save(), 0])
            try:
                if seat >= 0:
                    self.dealt[seat] = self._draw(
                        seat, DEALT_INGREDIENTS, self.s.deals[seat], j + 1
                    )
                else:
                    self.run(j, op)
                i += 1
            except _DeadEnd:
                while True:
                    budget -= 1
                    if not stack or budget <= 0:
                        raise
                    top = stack[-1]
                    top[2] += 1
                    if top[2] > self._REDRAWS:
                        stack.pop()
                        continue
                    self._restore(top[1])
                    i = top[0]
                    break

    def _save(self) -> tuple[Any, ...]:
        return (
            list(self.pool),
            [list(h) for h in self.hands],
            list(self.snap),
            [list(a) for a in self.at],
            [list(f) for f in self.forced],
            self.round,
            len(self.segs),
            len(self.rests),
            list(self.pending),
        )

    def _restore(self, saved: tuple[Any, ...]) -> None:
        pool, hands, snap, at, forced, self.round, segs, rests, pending = saved
        self.pending = list(pending)
        self.pool = list(pool)
        self.hands = [list(h) for h in hands]
        self.snap = list(snap)
        self.at = [list(a) for a in at]
        self.forced = [list(f) for f in forced]
        del self.segs[segs:]
        del self.rests[rests:]

    def run(self, j: int, op: tuple[Any, ...]) -> None:
        code = op[0]
        if code == _REMOVE:
            hand = self.hands[op[1]]
            counts = op[2]
            for k in range(5):
                hand[k] -= counts[k]
                if hand[k] < 0:
                    raise _DeadEnd
        elif code == _DRAW:
            _, seat, count, mm = op
            self.segs.append((self.round, self._draw(seat, count, self.s.draws[j], j + 1), mm))
        elif code == _ROUND:
            _, rnd, used, leftover = op
            if sum(self.pool) != leftover:
                raise DeterminizationError("the supply left at a round's end does not add up")
            self.rests.append([k for k in range(5) for _ in range(self.pool[k])])
            self.pool = [used[k] + self.pool[k] for k in range(5)]
            self.round = rnd
            self.forced = [_forced(self.at[s], self.snap[s], rnd) for s in range(self.s.players)]
            self.pending = [self._pending(s, j + 1, self.hands[s]) for s in range(self.s.players)]
            self._check_pool()
        elif code == _HAS:
            hand = self.hands[op[1]]
            if any(h < c for h, c in zip(hand, op[2], strict=True)):
                raise _DeadEnd
        elif code == _HAS_ANY:
            hand = self.hands[op[1]]
            if not any(all(h >= c for h, c in zip(hand, o, strict=True)) for o in op[2]):
                raise _DeadEnd
        elif code == _LACKS:
            hand = self.hands[op[1]]
            for need in op[2]:
                if all(h >= c for h, c in zip(hand, need, strict=True)):
                    raise _DeadEnd

    def _check_pool(self) -> None:
        demand = [0] * 32
        for seat in range(self.s.players):
            self._add_demand(demand, seat)
        have = _sums(self.pool)
        if any(have[m] < demand[m] for m in range(1, 32)):
            raise _DeadEnd

    @staticmethod
    def _covers(left: Sequence[int], demand: Sequence[int], more: Sequence[int] | None) -> bool:
        """Returns whether ``left`` holds every set of kinds' ``demand`` (plus ``more``)."""
        have = _sums(left)
        if more is None:
            for m in range(1, 32):
                if have[m] < demand[m]:
                    return False
        else:
            for m in range(1, 32):
                if have[m] < demand[m] + more[m]:
                    return False
        return True

    def _add_demand(self, demand: list[int], seat: int) -> None:
        """Adds to ``demand`` (per set of kinds, a bit mask) how many cards of those
        kinds the seat must still draw this round: the larger of what its checkpoints
        force and what its next draw cannot take elsewhere."""
        mine = self._seat_demand(seat)
        if mine is not None:
            for m in range(1, 32):
                demand[m] += mine[m]

    def _seat_demand(self, seat: int) -> list[int] | None:
        key = (self.forced[seat], self.pending[seat])
        cached = self.cache.get(seat)
        if cached is not None and cached[0] == key:
            return cached[1]
        demand = [0] * 32
        self._demand_of(demand, seat)
        kept = demand if any(demand) else None
        self.cache[seat] = (key, kept)
        return kept

    def _demand_of(self, demand: list[int], seat: int) -> None:
        forced = self.forced[seat]
        entries = self.pending[seat]
        if not any(forced) and not entries:
            return
        need = _sums(forced) if any(forced) else [0] * 32
        total = [0] * 32
        for caps, count in entries:
            if min(caps) >= count:
                total[31] += count
                continue
            room = _sums(caps)
            for kinds in range(1, 32):
                n = count - room[31 ^ kinds]
                if n > 0:
                    total[kinds] += n
        for kinds in range(1, 32):
            demand[kinds] += need[kinds] if need[kinds] > total[kinds] else total[kinds]

    def _pending(self, seat: int, j: int, hand: Sequence[int]) -> tuple[tuple[Counts, int], ...]:
        """Returns, for each draw the seat has left this round (from op ``j`` on), the
        most cards of each kind it may take (to stay short of what it lacked or will
        hold, counting none of those kinds from the draws before it) and its size."""
        s = self.s
        out = []
        gone = s.removed[seat]
        nxt = s.next_draw[seat][j]
        while nxt >= 0 and s.round_at[nxt] == self.round:
            count = s.ops[nxt][2]
            h = [hand[k] - gone[nxt][k] + gone[j][k] for k in range(5)]
            snap = s.draws[nxt]
            caps = [count] * 5
            upper = snap[3]
            if upper is not None:
                for k in range(5):
                    caps[k] = min(caps[k], max(0, upper[k] - h[k]))
            for lack in snap[2]:
                still = [(k, thr) for k, thr in lack if h[k] < thr]
                if len(still) == 1:
                    k, thr = still[0]
                    caps[k] = min(caps[k], max(0, thr - 1 - h[k]))
            if min(caps) < count:
                out.append((_counts(caps), count))
            nxt = s.next_draw[seat][nxt + 1]
        return tuple(out)

    def _draw(self, seat: int, count: int, snap: _Snapshot, after: int) -> list[int]:
        """Returns the kinds ``seat`` draws (in order), drawn from the supply; ``after``
        is the index of the op that follows the draw. Each card is of a kind that the
        seat's checkpoints allow and that leaves the other seats' demand coverable, drawn
        in proportion to how many such cards the supply holds."""
        rng = self.rng
        pool = self.pool
        demand = [0] * 32
        for other in range(self.s.players):
            if other != seat:
                self._add_demand(demand, other)
        have = _sums(pool)
        # Sets of kinds the others need so much of that this draw could eat into them.
        tight = [m for m in range(1, 32) if demand[m] and have[m] - demand[m] < count]
        start = self.hands[seat]
        caps = _quick_caps(start, count, snap, pool)
        for _ in range(self._TRIES):
            h = list(start)
            left = list(pool)
            kinds: list[int] = []
            room = list(caps) if caps is not None else None
            for c in range(count):
                blocked = 0
                if tight:
                    now = _sums(left)
                    for m in tight:
                        if now[m] <= demand[m]:
                            blocked |= m
                if room is not None:
                    # Nothing ahead can bind but how many of some kinds may come.
                    mask = 0
                    for k in range(5):
                        if room[k] > 0:
                            mask |= 1 << k
                else:
                    mask = _allowed(h, count - c - 1, snap, left)
                mask &= ~blocked
                weights = [left[k] if mask >> k & 1 else 0 for k in range(5)]
                if not any(weights):
                    break
                k = _weighted_index(rng, weights)
                h[k] += 1
                left[k] -= 1
                if room is not None:
                    room[k] -= 1
                kinds.append(k)
            else:
                old = self.forced[seat], self.pending[seat]
                self.forced[seat] = _forced(h, snap, self.round)
                self.pending[seat] = self._pending(seat, after, h)
                if self._covers(left, demand, self._seat_demand(seat)):
                    self.pool = left
                    self.hands[seat] = h
                    self.snap[seat] = snap
                    self.at[seat] = list(h)
                    return kinds
                self.forced[seat], self.pending[seat] = old
        raise _DeadEnd

    def finish(self) -> None:
        """Checks the seat's hand is the view's and keeps what the supply holds."""
        if tuple(self.hands[self.s.me]) != tuple(self.s.view.hand):
            raise _DeadEnd
        self.rests.append([k for k in range(5) for _ in range(self.pool[k])])

    def build(self) -> tuple[dict[str, Any], list[list[str]]]:
        """Returns the deal and the reshuffles that the sampled draws make."""
        s = self.s
        rng = self.rng
        supplies = []
        for r in range(s.rounds):
            top: list[str] = []
            drew_mm = False
            for rnd, kinds, mm in self.segs:
                if rnd == r + 1:
                    if mm:
                        top.append(MAMMA_MIA)
                        drew_mm = True
                    top.extend(INGREDIENTS[k] for k in kinds)
            rest = [INGREDIENTS[k] for k in self.rests[r]]
            rng.shuffle(rest)
            if not drew_mm:
                rest.insert(rng.randrange(len(rest) + 1), MAMMA_MIA)
            supplies.append(top + rest)
        hands = [[INGREDIENTS[k] for k in kinds] for kinds in self.dealt]
        waiters = [self._waiter(seat) for seat in range(s.players)]
        deal = {"hands": hands, "supply": supplies[0], "waiters": waiters}
        return deal, supplies[1:]

    def _waiter(self, seat: int) -> list[str]:
        """Returns the seat's original waiter, top first: each order first played with
        ``d`` originals drawn lies in the top ``d``; the rest anywhere (for the seat
        itself: its hand's originals in the top, its waiter's below)."""
        s = self.s
        rng = self.rng
        cards = [o.id for o in ORDERS_BY_COLOUR[s.colours[seat]]]
        deadlines = dict(s.deadlines[seat])
        if seat == s.me:
            drawn = s.originals_drawn[seat]
            for card in s.own_hand_originals:
                deadlines[card] = drawn
        slots: list[str | None] = [None] * _ORIGINAL_WAITER
        for card in sorted(deadlines, key=lambda c: (deadlines[c], c)):
            free = [j for j in range(deadlines[card]) if slots[j] is None]
            if not free:
                raise DeterminizationError(f"seat {seat}'s orders do not fit its waiter draws")
            slots[rng.choice(free)] = card
        others = [c for c in cards if c not in deadlines]
        rng.shuffle(others)
        free = [j for j in range(_ORIGINAL_WAITER) if slots[j] is None]
        for j, card in zip(free, others, strict=True):
            slots[j] = card
        return [c for c in slots if c is not None]


def _weighted_index(rng: random.Random, weights: Sequence[float]) -> int:
    """Returns an index drawn with probability proportional to ``weights`` (not all 0)."""
    total = sum(weights)
    x = rng.random() * total
    for j, w in enumerate(weights):
        x -= w
        if x < 0 and w > 0:
            return j
    return max(j for j, w in enumerate(weights) if w > 0)
