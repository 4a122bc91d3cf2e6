"""The ``search`` bot: Monte Carlo search over sampled deals, within a time budget.

Each decision (a turn or a resolution, R-RES-8) it:

1. ranks the options: every resolution option, or the ``candidates`` turns (8)
   the counter bot scores best, its own choice first (the counter bot's choice is
   also the answer when there is no time to search, or nothing to sample from);
2. samples the hidden cards (``mammamia.determinize``): complete deals consistent
   with everything its view shows, a fresh one every fourth deal and variants of
   it in between (the supply's undrawn order and the waiters dealt again);
3. plays every option still in out on each deal, to the end of the round being
   played (its resolution included; to the end of the game in the last round), all
   seats following a quick rollout policy that knows the sampled deal: an order
   goes in when the oven, less what the orders already in it will take, and at most
   two cards from hand would bake it; otherwise one card of the kind the hand needs
   least; refill from the waiter below two orders; bake with the fewest cards;
4. scores each rollout by the pizzas it ends ahead of the best other seat (and a
   hundredth per ingredient card ahead, the tie-break of R-END-2), or at the end of
   the game by its share of the win;
5. spreads its rollouts by sequential halving: the budget is cut into as many
   phases as it takes to halve the options down to one; in each phase every option
   still in is played out on the same deals, then the worse half leaves.

``budget_ms`` (200) is the time per decision: the search stops at 90% of it, less
an adaptive margin, before any step it expects not to finish in time, and keeps the
garbage collector's pauses out of it. The margin is learnt from the bot's own
answers: each one later than the budget (by the bot's clock, or from the request's
arrival to the answer's sending, as the SDK reports it) grows the margin by its
overshoot; each one on time shrinks it by a tenth. It never exceeds half the
budget. With ``iterations`` it runs that many rollouts and reads no clock (and
keeps no margin), so that a ``seed`` (or the game's seed) gives the same decisions
on any machine. Each decision logs its rollouts at debug level
(``search_decision``: ``iterations``, ``deals``, ``options``, ``ms``).
The choices behind this design, and what it wins, are measured in docs/search.md.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Sequence
from typing import Final

from bots.counter import CounterBot, _needs, _opponents_want, _owners
from client_sdk import INGREDIENTS, ORDERS, SUPPLY, WAITER, Bot, Resolve, Turn, View
from client_sdk.bot import log
from mammamia import RESOLVE, Action, State
from mammamia.determinize import DeterminizationError, Sampler

_KIND: Final = {name: k for k, name in enumerate(INGREDIENTS)}
_STANDARD: Final = {o.id: o.need for o in ORDERS.values() if o.kind == "standard"}
_SPECIAL: Final = {o.id: (o.kind, o.personal) for o in ORDERS.values() if o.kind != "standard"}
_BOMBASTICA: Final = 15
_MARGIN: Final = 0.9
"""The share of the time budget the search may use (the rest covers the last step)."""
_LATE_CAP: Final = 0.5
"""The adaptive margin's ceiling, as a share of the budget: the search keeps the rest."""
_SHRINK: Final = 0.9
"""What is left of the adaptive margin after an answer on time."""
_FRESH: Final = 4
"""A fresh sample of the hidden cards every _FRESH deals; variants of it in between."""
_ATTEMPTS: Final = 12
"""Draws allowed for a fresh sample (each a walk and a replay), while time allows."""
_HAND: Final = 7


class _Oven:
    """What the oven would leave on the table if it were resolved now, kept up to date
    card by card as a rollout plays (each order is judged when it goes in, against
    the table then and its owner's hand then: the rollout knows every hand, it is a
    sampled deal), and the cards each owner would add from its hand."""

    __slots__ = ("reserved", "room", "round", "seen")

    def __init__(self, state: State) -> None:
        self.round = -1
        self.seen = 0
        self.room = [0, 0, 0, 0, 0]
        self.reserved = [[0, 0, 0, 0, 0] for _ in range(state.players)]
        self.update(state)

    def update(self, state: State) -> None:
        oven = state.oven
        if state.round != self.round or len(oven) < self.seen:
            self.round = state.round
            self.seen = 0
            self.room = [0, 0, 0, 0, 0]
            for r in self.reserved:
                r[:] = (0, 0, 0, 0, 0)
        room = self.room
        kind = _KIND
        for card in oven[self.seen :]:
            k = kind.get(card)
            if k is not None:
                room[k] += 1
            else:
                self._order(state, card)
        self.seen = len(oven)

    def spare(self, state: State, seat: int) -> list[int]:
        """Returns the seat's hand less the cards its orders in the oven will want."""
        hand = state.hand_ings[seat]
        held = self.reserved[seat]
        return [h - r if h > r else 0 for h, r in zip(hand, held, strict=True)]

    def _order(self, state: State, card: str) -> None:
        who = state.owner(card)
        have = self.spare(state, who)
        held = self.reserved[who]
        room = self.room
        need = _STANDARD.get(card)
        if need is not None:
            short = [need[j] - room[j] if need[j] > room[j] else 0 for j in range(5)]
            if all(short[j] <= have[j] for j in range(5)):
                for j in range(5):
                    room[j] -= need[j] - short[j]
                    held[j] += short[j]
            return
        special, p = _SPECIAL[card]
        if special == "bombastica":
            short_n = _BOMBASTICA - sum(room)
            if short_n <= sum(have):
                room[:] = (0, 0, 0, 0, 0)
                for j in range(5):
                    take = min(have[j], max(0, short_n))
                    held[j] += take
                    short_n -= take
            return
        miss, x = _missing(card, room, have)
        if miss < 99 and x >= 0 and x != p:
            size = 3 if special == "minimale" else 6
            use_p = min(1, room[p])
            use_x = min(size, room[x])
            room[p] -= use_p
            room[x] -= use_x
            held[p] += 1 - use_p
            held[x] += size - use_x


def _missing(order: str, room: Sequence[int], hand: Sequence[int]) -> tuple[int, int]:
    """Returns (cards the hand must add, a kind worth putting under it or -1) for the
    order to bake from the oven's ``room`` and the hand; (99, -1) when it cannot."""
    need = _STANDARD.get(order)
    if need is not None:
        miss = 0
        under = -1
        for k in range(5):
            short = need[k] - room[k]
            if short > 0:
                if short > hand[k]:
                    return 99, -1
                miss += short
                under = k
        return miss, under
    special, p = _SPECIAL[order]
    if special == "bombastica":
        short = _BOMBASTICA - sum(room)
        if short <= 0:
            return 0, -1
        return (short, -1) if short <= sum(hand) else (99, -1)
    best = (99, -1)
    if special == "minimale":
        present = [room[k] for k in range(5) if k != p and room[k]]
        if not present:
            return best
        low = min(present)
        kinds = [k for k in range(5) if k != p and room[k] == low]
        size = 3
    else:
        kinds = [k for k in range(5) if k != p]
        size = 6
    for k in kinds:
        short_p = 1 - room[p] if room[p] < 1 else 0
        short_k = size - room[k] if room[k] < size else 0
        if short_p <= hand[p] and short_k <= hand[k] and short_p + short_k < best[0]:
            best = (short_p + short_k, k if short_k else (p if short_p else -1))
    return best


def policy_turn(state: State, oven: _Oven | None = None) -> Turn:
    """Returns the rollout policy's turn for the seat to act: an order that the oven
    (less what the orders already in it take) and at most two cards from hand would
    bake goes in on one card, else one card of the kind its orders need least; refill
    from the waiter while holding fewer than two orders."""
    seat = state.to_act
    assert seat is not None
    hand = state.hand_ings[seat]
    orders = state.hand_orders[seat]
    waiter = state.waiters[seat]
    held = hand[0] + hand[1] + hand[2] + hand[3] + hand[4]
    if not held:
        if len(orders) >= _HAND:
            return Turn(None, 0, None, None)
        return Turn(None, 0, None, WAITER if waiter and not orders else SUPPLY)
    if oven is None:
        oven = _Oven(state)
    else:
        oven.update(state)
    room = oven.room
    spare = oven.spare(state, seat)
    best_order = None
    best_miss = 3
    best_under = -1
    for order in orders:
        miss, under = _missing(order, room, spare)
        if miss < best_miss:
            best_order, best_miss, best_under = order, miss, under
    # The kind to play: one the chosen order lacks, else the one held most beyond
    # what the hand's orders (and those in the oven) ask for.
    if best_under >= 0 and hand[best_under]:
        k = best_under
    else:
        want = [0, 0, 0, 0, 0]
        for order in orders:
            need = _STANDARD.get(order)
            if need is not None and order != best_order:
                for j in range(5):
                    want[j] += need[j]
        k = max(range(5), key=lambda j: (spare[j] - want[j] if hand[j] else -99, hand[j]))
    left = len(orders) - (best_order is not None)
    size = held - 1 + left
    draw = None if size >= _HAND else WAITER if waiter and left < 2 else SUPPLY
    return Turn(INGREDIENTS[k], 1, best_order, draw)


def policy_resolve(state: State) -> Resolve:
    """Returns the rollout policy's resolution: the bake that adds the fewest cards."""
    best = None
    fewest = 99
    for option in state.legal_actions():
        assert isinstance(option, Resolve)
        if option.bake:
            cost = sum(option.hand) if option.hand else 0
            if cost < fewest:
                best, fewest = option, cost
    return best if best is not None else Resolve(False)


def playout(state: State, to_round_end: bool = False) -> State:
    """Plays ``state`` (changed in place) with the rollout policy to the end of the
    game, or only until the round it is in has been resolved."""
    rnd = state.round
    oven = _Oven(state)
    while state.phase != "over":
        if state.phase == "turn":
            state.apply(policy_turn(state, oven))
        else:
            state.apply(policy_resolve(state))
            if to_round_end and state.round != rnd:
                break
    return state


def value_of(state: State, seat: int) -> float:
    """Returns how good a rolled-out state is for ``seat``: at the end of the game its
    share of the win and a little for each pizza ahead of the best other seat; after a
    round's resolution the pizzas ahead (and a hundredth per ingredient card in hand
    ahead, the tie-break of R-END-2)."""
    scores = state.scores()
    mine = scores[seat]
    best = max(s for i, s in enumerate(scores) if i != seat)
    lead = mine[0] - best[0] + 0.01 * (mine[1] - best[1])
    if state.phase == "over":
        winners = state.winners()
        share = 1.0 / len(winners) if seat in winners else 0.0
        return share + 0.05 * lead
    return 0.2 * lead


class _Ranker(CounterBot):
    """The counter bot's judgement of turns, all of them, best first (its choice)."""

    def ranked(self, view: View) -> list[Action]:
        """Returns the legal turns by the counter bot's score, best first (ties in the
        engine's order, as ``turn`` breaks them)."""
        owners = _owners(view, self.opponent_cover)
        needs = _needs(view.hand_orders)
        wanted = _opponents_want(view)
        cost = [self.opponent_weight * w + 0.3 * n for w, n in zip(wanted, needs, strict=True)]
        scores = [self._score(view, a, owners, cost) for a in view.legal]  # type: ignore[arg-type]
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        return [view.legal[i] for i in order]


class BudgetedSearch(Bot):
    """What a search bot shares: a time budget per decision, or a fixed number of
    rollouts with a seed, and the collector kept out of the decision.

    ``budget_ms`` is the time per decision (default 200); ``iterations``, when given,
    is a number of rollouts instead, with no clock: the same ``seed`` (or, without
    one, the same game seed) then gives the same decisions on any machine.
    Subclasses implement ``_search``; ``_seeds`` gives each decision its generator.
    Raises ValueError for a budget, iteration count or seed out of range.
    """

    def __init__(
        self, budget_ms: float = 200, iterations: int | None = None, seed: int | None = None
    ) -> None:
        if type(budget_ms) not in (int, float) or not budget_ms > 0:
            raise ValueError(f"budget_ms must be more than 0, got {budget_ms!r}")
        if iterations is not None and (type(iterations) is not int or iterations < 1):
            raise ValueError(f"iterations must be a whole number of 1 or more, got {iterations!r}")
        if seed is not None and type(seed) is not int:
            raise ValueError(f"seed must be a whole number, got {seed!r}")
        self.budget_ms = float(budget_ms)
        self.iterations = iterations
        self.seed = seed
        self.margin_s = 0.0
        """Seconds the search keeps back from its budget, learnt from late answers."""
        self._taken = 0.0  # seconds the last decision took by the bot's own clock
        self._search_rng: random.Random | None = None

    clock = staticmethod(time.perf_counter)
    """The clock the budget is kept by (seconds); tests put a fake one on an instance."""

    def on_game_start(self, view: View) -> None:
        """Starts the game's stream of search seeds again (from ``seed`` or ``rng``)."""
        self._search_rng = None

    def on_answered(self, seconds: float) -> None:
        """Grows the margin when the SDK reports an answer sent later than the budget
        after its request arrived (the bot's own clock does not see the time spent
        around the decision: a thread waiting for a core, the answer's sending)."""
        budget = self.budget_ms / 1000
        # The overshoot the bot's own clock saw has been added already (``_decide``).
        unseen = seconds - max(self._taken, budget)
        if self.iterations is None and unseen > 0:
            self.margin_s = min(self.margin_s + unseen, budget * _LATE_CAP)

    def _learn(self, taken: float) -> None:
        """Keeps the margin (``margin_s``) after an answer that took ``taken``
        seconds: a late one adds its overshoot, one on time takes a tenth off; at most
        ``_LATE_CAP`` of the budget."""
        budget = self.budget_ms / 1000
        self._taken = taken
        over = taken - budget
        if over > 0:
            self.margin_s = min(self.margin_s + over, budget * _LATE_CAP)
        else:
            self.margin_s *= _SHRINK

    def turn(self, view: View) -> Turn:
        """Returns the turn the search finds best."""
        action = self._decide(view)
        assert isinstance(action, Turn)
        return action

    def resolve(self, view: View) -> Resolve:
        """Returns the resolution the search finds best (R-RES-8)."""
        action = self._decide(view)
        assert isinstance(action, Resolve)
        return action

    def _decide(self, view: View) -> Action:
        # The cyclic collector can pause for tens of milliseconds when it walks the
        # long-lived heap (the engine's caches): it waits until the decision is made.
        collecting = gc.isenabled()
        gc.disable()
        timed = self.iterations is None  # (with iterations, no clock is read)
        started = self.clock() if timed else 0.0
        try:
            return self._search(view)
        finally:
            if collecting:
                gc.enable()
            if timed:
                self._learn(self.clock() - started)

    def _search(self, view: View) -> Action:
        raise NotImplementedError

    def _seeds(self) -> random.Random:
        """Returns the game's generator of per-decision seeds."""
        if self._search_rng is None:
            seed = self.seed if self.seed is not None else self.rng.getrandbits(64)
            self._search_rng = random.Random(seed)
        return self._search_rng


class SearchBot(BudgetedSearch):
    """Searches each decision over sampled deals within a time budget (module docstring).

    ``budget_ms``, ``iterations`` and ``seed`` are those of :class:`BudgetedSearch`;
    ``candidates`` is how many turns the counter bot's ranking passes to the search.
    """

    name = "search"

    to_round_end = True
    """Whether rollouts stop once the round is resolved (else they play the game out)."""

    fresh_every = _FRESH
    """A fresh deal of the hidden cards every this many deals (variants between)."""

    def __init__(
        self,
        budget_ms: float = 200,
        iterations: int | None = None,
        seed: int | None = None,
        candidates: int = 8,
    ) -> None:
        super().__init__(budget_ms, iterations, seed)
        if type(candidates) is not int or candidates < 2:
            raise ValueError(f"candidates must be a whole number of 2 or more, got {candidates!r}")
        self.candidates = candidates
        self.last_iterations = 0
        """Rollouts the last decision ran (0 when it did not search)."""
        self._counter = _Ranker()
        self._per_event = 0.0001  # seconds per history event to sample a deal

    def _search(self, view: View) -> Action:
        clock = self.clock
        started = clock()
        self.last_iterations = 0
        rng = random.Random(self._seeds().getrandbits(64))
        legal = list(view.legal)
        if len(legal) == 1:
            return legal[0]
        assert view.seat is not None
        seat = view.seat
        if view.phase == RESOLVE:
            choice: Action = self._counter.resolve(view)
            options = legal
        else:
            ranked = self._counter.ranked(view)
            choice = ranked[0]
            options = ranked[: self.candidates]
        budget = self.iterations
        timed = budget is None
        # Stop early enough that the last step taken still ends within the budget,
        # and the answer is sent within it (the margin learnt from late answers).
        stop = started + self.budget_ms / 1000 * _MARGIN - self.margin_s
        events = len(view.history) + 1
        if timed and clock() + self._per_event * events > stop:
            # No time to deal even once: the counter's choice. The estimate is halved,
            # so that one slow deal (the process kept waiting for a core) does not
            # keep the search off for the rest of the game.
            self._per_event *= 0.5
            return choice
        t = clock()
        try:
            sampler = Sampler(view)
        except DeterminizationError:
            return choice
        n = len(options)
        totals = [0.0] * n
        counts = [0] * n
        alive = list(range(n))
        phases = max(1, (n - 1).bit_length())
        done = deals = 0
        # Seconds a rollout, a fresh deal and a variant take, learnt as they run.
        rollout_cost, fresh_cost, variant_cost = 0.0005, 0.003, 0.0005
        out = False
        for phase in range(phases):
            # Sequential halving: each phase an equal share of the budget, every option
            # still in played out on the same deals, then the worse half leaves.
            goal = (budget * (phase + 1)) // phases if budget is not None else 0
            phase_stop = started + (stop - started) * (phase + 1) / phases
            while not out:
                fresh = deals % self.fresh_every == 0
                if not timed:
                    if done >= goal:
                        break
                elif deals:
                    now = clock()
                    if now >= phase_stop:
                        break
                    if fresh and now + fresh_cost + rollout_cost > stop:
                        fresh = False  # no time for a fresh deal: a variant
                    if now + variant_cost + rollout_cost > stop:
                        out = True
                        break
                    t = now
                base = self._deal(sampler, rng, fresh or not deals, stop if timed else None)
                if base is None:
                    if not deals:
                        return choice
                    base = sampler.variant(rng)
                if timed:
                    spent = clock() - t
                    if not deals:
                        # What a view's bookkeeping and first deal cost per event.
                        self._per_event = 0.5 * self._per_event + 0.5 * spent / events
                    elif fresh:
                        fresh_cost = max(0.5 * fresh_cost + 0.5 * spent, spent)
                    else:
                        variant_cost = max(0.8 * variant_cost + 0.2 * spent, spent)
                deals += 1
                for i in alive:
                    t = clock()
                    if timed:
                        if t + rollout_cost > stop:
                            out = True
                            break
                    elif done >= goal:
                        break
                    child = base.child(options[i])
                    playout(child, self.to_round_end)
                    totals[i] += value_of(child, seat)
                    counts[i] += 1
                    done += 1
                    if timed:
                        spent = clock() - t
                        rollout_cost = max(0.8 * rollout_cost + 0.2 * spent, spent / 4)
            if len(alive) > 1 and phase < phases - 1:
                alive.sort(key=lambda i: -_mean(totals[i], counts[i]))
                alive = alive[: max(1, (len(alive) + 1) // 2)]
            if out:
                break
        self.last_iterations = done
        log.debug(
            "search_decision",
            bot=self.name,
            seat=seat,
            phase=view.phase,
            iterations=done,
            deals=deals,
            options=n,
            ms=round((clock() - started) * 1000, 1),
        )
        if not done:
            return choice
        best = max(alive, key=lambda i: _mean(totals[i], counts[i]))
        return options[best]

    def _deal(
        self, sampler: Sampler, rng: random.Random, fresh: bool, stop: float | None
    ) -> State | None:
        """Returns a sampled deal: a fresh one (drawn again until ``stop``, or a few
        times without a clock), else a variant of the last; None when none was found."""
        if not fresh:
            return sampler.variant(rng)
        for attempt in range(_ATTEMPTS):
            if stop is not None and attempt and self.clock() > stop:
                break
            try:
                return sampler.sample(rng, attempts=1)
            except DeterminizationError:
                continue
        return None


def _mean(total: float, count: int) -> float:
    return total / count if count else -1e9
