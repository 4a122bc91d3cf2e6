"""What a seat or a spectator may know of a game (R-VIEW-1..4).

Views are built field by field from what the rules make public, plus the seat's
own hand and waiter; nothing else of the state is copied, so nothing hidden can
leak through a view by accident.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from .actions import Action, Counts
from .cards import INGREDIENTS, MINIMALE, MONOTONI, ORDERS
from .state import RESOLVE, State


@dataclass(frozen=True, slots=True)
class SeatInfo:
    """The public facts about one seat (R-VIEW-1, R-TURN-9)."""

    seat: int
    colour: str
    hand_size: int
    orders_in_hand: int
    waiter_size: int
    delivered: tuple[str, ...]

    @property
    def ingredients_in_hand(self) -> int:
        """Returns how many ingredient cards the seat holds (public: size minus orders)."""
        return self.hand_size - self.orders_in_hand


@dataclass(frozen=True, slots=True)
class Event:
    """One public event of the game, in the order it happened.

    ``kind`` is one of:

    - ``round_started``: ``round`` begins, ``seat`` starts it.
    - ``turn``: ``seat`` played ``count`` cards of ``ingredient`` (None: passed) and
      ``order`` (or None), then drew ``drawn`` cards from ``draw`` (or nothing);
      ``mamma_mia`` when it drew the Mamma Mia! card.
    - ``round_ended``: ``round`` ends, by stalemate (R-TURN-8) when ``stalemate``.
    - ``baked``: ``seat``'s ``order`` was baked, with ``ingredient`` (the "?"/"J"
      kind of a Minimale or Monotoni, chosen or the only one) and ``hand`` (cards
      added from hand); ``auto`` when nobody was asked.
    - ``failed``: ``seat``'s ``order`` failed; ``declined`` when the owner chose so.
    - ``game_over``: the third resolution ended the game.
    """

    kind: str
    seat: int | None = None
    round: int = 0
    ingredient: str | None = None
    count: int = 0
    order: str | None = None
    draw: str | None = None
    drawn: int = 0
    mamma_mia: bool = False
    stalemate: bool = False
    hand: Counts | None = None
    auto: bool = False
    declined: bool = False


@dataclass(frozen=True, slots=True)
class View:
    """A game as one seat (or, with ``seat`` None, a spectator) may see it.

    ``oven`` lists every card played onto the oven this round (and carried over),
    first played first; during resolution the first ``revealed`` of them have been
    turned over. ``hand``/``hand_orders``/``waiter`` are the seat's own cards (empty
    for a spectator); ``waiter`` is sorted, as its order is hidden (R-VIEW-2).
    ``legal`` holds the actions open to the seat when it is asked, else is empty.
    """

    seat: int | None
    players: int
    colours: tuple[str, ...]
    round: int
    phase: str
    to_act: int | None
    deciding: str | None
    supply_size: int
    oven: tuple[str, ...]
    revealed: int
    table: Counts
    used: tuple[str, ...]
    mamma_mia_holder: int | None
    seats: tuple[SeatInfo, ...]
    hand: Counts
    hand_orders: tuple[str, ...]
    waiter: tuple[str, ...]
    history: tuple[Event, ...]
    legal: tuple[Action, ...]
    winners: tuple[int, ...]

    @property
    def is_my_turn(self) -> bool:
        """Whether this view's seat is the one asked now."""
        return self.seat is not None and self.seat == self.to_act

    @property
    def unrevealed(self) -> tuple[str, ...]:
        """Returns the oven cards not yet turned over (all of them outside resolution)."""
        return self.oven[self.revealed :]


_NO_CARDS: Counts = (0, 0, 0, 0, 0)


def _event(raw: tuple[Any, ...]) -> Event | None:
    """Returns the public Event for one of the engine's raw event tuples (None for none)."""
    tag = raw[0]
    if tag == "turn":
        _, seat, kind, count, order, draw, drawn, mamma_mia = raw
        return Event(
            "turn",
            seat,
            ingredient=kind,
            count=count,
            order=order,
            draw=draw,
            drawn=drawn,
            mamma_mia=mamma_mia,
        )
    if tag == "round":
        return Event("round_started", raw[2], round=raw[1])
    if tag == "round_end":
        return Event("round_ended", round=raw[1], stalemate=raw[2])
    if tag == "bake":
        _, seat, order, ingredient, hand, auto, from_table = raw
        if ingredient is None:
            ingredient = _baked_kind(order, from_table, hand)
        return Event("baked", seat, order=order, ingredient=ingredient, hand=hand, auto=auto)
    if tag == "fail":
        return Event("failed", raw[1], order=raw[2], declined=raw[3])
    if tag == "over":
        return Event("game_over")
    return None


def _baked_kind(order: str, from_table: Counts, hand: Counts | None) -> str | None:
    """Returns the "?"/"J" kind a Minimale or Monotoni was baked with when the owner
    did not name it (it was the only one): the recipe's one kind besides the
    personal ingredient (R-RES-6, R-RES-7). None for other orders."""
    card = ORDERS[order]
    if card.kind not in (MINIMALE, MONOTONI):
        return None
    used = [t + (hand[k] if hand else 0) for k, t in enumerate(from_table)]
    kinds = [k for k, n in enumerate(used) if n and k != card.personal]
    return INGREDIENTS[kinds[0]] if len(kinds) == 1 else None


# An Event is a pure function of its raw tuple, and games repeat the same tuples
# ("seat 2 plays 1 olive, draws 1 from the supply") endlessly, so conversions are
# memoised: a view's history costs a dictionary lookup per event. The rare tuples
# are many, though (40,000 distinct in 11,000 four-player games, about 320 bytes
# each), so the memo starts afresh at a bound that keeps it to a few megabytes.
_CONVERTED: dict[tuple[Any, ...], Event | None] = {}
_CONVERTED_LIMIT: Final = 20_000


def public_events(state: State, since: int = 0) -> tuple[Event, ...]:
    """Returns the public events from index ``since`` of the game's event list on
    (every event is public, R-VIEW-1)."""
    converted = _CONVERTED
    out = []
    for raw in state.events[since:] if since else state.events:
        event = converted.get(raw)
        if event is None:
            if len(converted) >= _CONVERTED_LIMIT:
                converted.clear()
            event = converted[raw] = _event(raw)
        if event is not None:
            out.append(event)
    return tuple(out)


def view_of(state: State, seat: int | None, *, history: bool = True) -> View:
    """Returns what ``seat`` may know of ``state`` (a spectator's view when None).

    With ``history=False`` the view's ``history`` is left empty, for callers that
    follow the public events themselves (``public_events``) and want a cheap view.
    """
    if seat is not None and not 0 <= seat < state.players:
        raise ValueError(f"seat must be 0..{state.players - 1}, got {seat!r}")
    seats = tuple(
        SeatInfo(
            i,
            state.colours[i],
            state.hand_size(i),
            len(state.hand_orders[i]),
            len(state.waiters[i]),
            tuple(state.delivered[i]),
        )
        for i in range(state.players)
    )
    hand: Counts = _NO_CARDS
    hand_orders: tuple[str, ...] = ()
    waiter: tuple[str, ...] = ()
    legal: tuple[Action, ...] = ()
    if seat is not None:
        a, b, c, d, e = state.hand_ings[seat]
        hand = (a, b, c, d, e)
        hand_orders = tuple(state.hand_orders[seat])
        waiter = tuple(sorted(state.waiters[seat]))
        if state.to_act == seat:
            legal = state.legal_actions()
    return View(
        seat=seat,
        players=state.players,
        colours=state.colours,
        round=state.round,
        phase=state.phase,
        to_act=state.to_act,
        deciding=state.deciding,
        supply_size=len(state.supply),
        oven=tuple(state.oven),
        revealed=state.revealed if state.phase == RESOLVE else 0,
        table=(state.table[0], state.table[1], state.table[2], state.table[3], state.table[4]),
        used=tuple(state.used),
        mamma_mia_holder=state.holder,
        seats=seats,
        hand=hand,
        hand_orders=hand_orders,
        waiter=waiter,
        history=public_events(state) if history else (),
        legal=legal,
        winners=tuple(state.winners()),
    )
