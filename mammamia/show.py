"""A game record as a human-readable log, one line per event (``mammamia show``).

The log is written from the game's public events alone (R-VIEW-1): who played
what and drew from where, and at each resolution every order as it is revealed,
with the table it meets and what became of it. It never shows a hand or the supply.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .cards import INGREDIENTS, KIND_INDEX
from .record import Record, _apply
from .state import State


def _cards(counts: Sequence[int]) -> str:
    """Returns counts by kind as text, e.g. '2 salami, 1 olive' ('nothing' when empty)."""
    return ", ".join(f"{n} {INGREDIENTS[k]}" for k, n in enumerate(counts) if n) or "nothing"


def show(record: Record) -> Iterator[str]:
    """Yields the log lines of a record's game; raises RecordError where it breaks a rule."""
    state = record.start()
    names = record.meta.get("names")
    log = _Log(state, names if isinstance(names, list) else None)
    yield (
        f"Mamma Mia! for {state.players} players: "
        + ", ".join(log.who(i) for i in range(state.players))
    )
    seen = 0
    for index, (seat, action) in enumerate(record.actions):
        yield from log.lines(state.events[seen:])
        seen = len(state.events)
        _apply(state, index, seat, action)
    yield from log.lines(state.events[seen:])
    if not state.is_over:
        assert state.to_act is not None
        asked = f"to decide on {state.deciding}" if state.deciding else "to play"
        yield f"(the record stops here, in round {state.round}: {log.who(state.to_act)} {asked})"
        return
    ranks = state.ranking()
    scores = state.scores()
    for seat in sorted(range(state.players), key=lambda s: (ranks[s], s)):
        pizzas, ings = scores[seat]
        yield (
            f"#{ranks[seat]} {log.who(seat)}: {pizzas} pizza{'s' * (pizzas != 1)} "
            f"delivered, {ings} ingredient{'s' * (ings != 1)} in hand"
        )
    winners = state.winners()
    yield f"Winner{'s' * (len(winners) > 1)}: " + " and ".join(log.who(s) for s in winners)


class _Log:
    """Follows the oven and the table from public events to describe each reveal."""

    def __init__(self, state: State, names: list[Any] | None) -> None:
        self.state = state
        self.names = names
        self.oven: list[str] = []
        self.next = 0  # oven cards revealed so far this resolution
        self.table = [0, 0, 0, 0, 0]
        self.holder: int | None = None

    def who(self, seat: int) -> str:
        label = f"seat {seat} ({self.state.colours[seat]}"
        if self.names and seat < len(self.names):
            label += f", {self.names[seat]}"
        return label + ")"

    def lines(self, events: Sequence[tuple[Any, ...]]) -> Iterator[str]:
        for event in events:
            yield from getattr(self, "_" + event[0])(*event[1:])

    # -- turns ------------------------------------------------------------------------

    def _round(self, number: int, first: int) -> Iterator[str]:
        if number > 1:
            yield from self._clear_table()
        supply = len(self.state.supply)
        carried = f"; the oven holds {len(self.oven)} cards left over" if self.oven else ""
        yield (
            f"== Round {number}: {self.who(first)} starts; the supply holds {supply} cards{carried}"
        )

    def _turn(
        self,
        seat: int,
        kind: str | None,
        count: int,
        order: str | None,
        draw: str | None,
        drawn: int,
        mamma_mia: bool,
    ) -> Iterator[str]:
        if kind is None:
            text = f"{self.who(seat)} passes"
        else:
            text = f"{self.who(seat)} plays {count} {kind}"
            self.oven += [kind] * count
        if order:
            text += f" and order {order}"
            self.oven.append(order)
        if mamma_mia:
            self.holder = seat
            text += ", draws the Mamma Mia! card and " + (
                f"{drawn} more from the supply"
                if drawn
                else "nothing more: it was the supply's last card"
            )
        elif draw:
            text += f", draws {drawn} from the {draw}"
        elif kind is None:
            text += " with seven orders in hand"
        yield text

    def _round_end(self, number: int, stalemate: bool) -> Iterator[str]:
        why = "every player passed (stalemate, R-TURN-8)" if stalemate else "the supply is empty"
        by = (
            f"{self.who(self.holder)} turns the oven over"
            if self.holder is not None
            else "the oven is turned over"
        )
        yield f"== Round {number} ends: {why}; {by} ({len(self.oven)} cards)"
        self.holder = None
        self.next = 0
        self.table = [0, 0, 0, 0, 0]

    # -- resolution -------------------------------------------------------------------

    def _reveal(self, order: str) -> str:
        """Returns the table as ``order`` meets it, revealing the cards before it."""
        while self.next < len(self.oven) and self.oven[self.next] != order:
            self.table[KIND_INDEX[self.oven[self.next]]] += 1
            self.next += 1
        self.next += 1
        return f"  {order} of {self.who(self.state.owner(order))} meets {_cards(self.table)}"

    def _bake(
        self,
        seat: int,
        order: str,
        ingredient: str | None,
        hand: Sequence[int] | None,
        auto: bool,
        from_table: Sequence[int],
    ) -> Iterator[str]:
        text = self._reveal(order) + ": baked"
        if ingredient:
            text += f" with {ingredient}"
        parts = []
        if any(from_table):
            parts.append(f"{_cards(from_table)} from the table")
        if hand:
            parts.append(f"{_cards(hand)} from hand")
        text += ", " + " and ".join(parts)
        if auto:
            text += " (no choice to make)"
        for k, n in enumerate(from_table):
            self.table[k] -= n
        yield text

    def _fail(self, seat: int, order: str, declined: bool) -> Iterator[str]:
        why = "declined by its owner" if declined else "cannot be baked"
        yield self._reveal(order) + f": {why}, back under the waiter"

    def _clear_table(self) -> Iterator[str]:
        for card in self.oven[self.next :]:
            self.table[KIND_INDEX[card]] += 1
        yield f"  left on the table: {_cards(self.table)}"
        # R-NEXT-1: the leftovers are the next round's oven, in canonical order.
        self.oven = [INGREDIENTS[k] for k in range(5) for _ in range(self.table[k])]
        self.next = 0
        self.table = [0, 0, 0, 0, 0]

    def _over(self) -> Iterator[str]:
        yield from self._clear_table()
        yield "== Game over after three rounds"
