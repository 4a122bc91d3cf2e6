"""A game told in words from its public events alone (R-VIEW-1): the one narrator of
the text log (``mammamia show``, ``mammamia watch``) and the web page's replays.

The narrator follows what every player sees: the oven as the turns fill it, the Mamma
Mia! card's holder, and at each resolution the oven's cards turned up one by one onto
the table, every order meeting the table as it is then. It never reads a hand or the
supply's cards; how many cards the supply holds comes from the game it is given.

``Narrator.lines`` says each event as ``Line``s, one per thing that happens, down to
each ingredient turned up; the text log leaves those out (an order's line names the
table it meets), a replay shows each. After each line is yielded the narrator's
``round``, ``oven``, ``next``, ``table``, ``used`` and ``holder`` are the picture at that moment.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence, Sized
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .cards import INGREDIENTS, KIND_INDEX

LineKind = Literal[
    "round", "turn", "round_end", "turned_up", "decides", "bake", "fail", "leftovers", "over"
]


class Game(Protocol):
    """What the narrator reads of the game besides its events: public facts only."""

    @property
    def colours(self) -> Sequence[str]: ...

    @property
    def supply(self) -> Sized: ...

    def owner(self, order: str) -> int: ...


@dataclass(frozen=True, slots=True)
class Line:
    """One thing that happened, in words: ``seat`` is the seat that acts (or whose
    order it is), ``at`` the oven card it is about (its index in ``Narrator.oven``)."""

    kind: LineKind
    text: str
    seat: int | None = None
    at: int | None = None


def cards(counts: Sequence[int]) -> str:
    """Returns counts by kind as text, e.g. '2 salami, 1 olive' ('nothing' when empty)."""
    return ", ".join(f"{n} {INGREDIENTS[k]}" for k, n in enumerate(counts) if n) or "nothing"


class Narrator:
    """Follows the oven and the table from public events and says each event."""

    def __init__(self, game: Game, names: Sequence[Any] | None = None) -> None:
        self.game = game
        self.names = list(names) if names else None
        self.oven: list[str] = []
        self.next = 0  # oven cards turned up so far this resolution
        self.table = [0, 0, 0, 0, 0]
        self.used = 0  # cards baked into pizzas this round (to the used pile)
        self.holder: int | None = None
        self.round = 0
        self.resolving = False

    @property
    def players(self) -> int:
        """Returns the number of players."""
        return len(self.game.colours)

    def who(self, seat: int) -> str:
        """Returns a seat as the narrator names it: 'seat 0 (red)', 'seat 0 (red, Ada)'."""
        label = f"seat {seat} ({self.game.colours[seat]}"
        if self.names and seat < len(self.names) and self.names[seat]:
            label += f", {self.names[seat]}"
        return label + ")"

    def header(self) -> str:
        """Returns the line that names the players."""
        return f"Mamma Mia! for {self.players} players: " + ", ".join(
            self.who(i) for i in range(self.players)
        )

    def lines(self, events: Sequence[tuple[Any, ...]]) -> Iterator[Line]:
        """Yields the lines of the game's public events (``State.events``), in order."""
        for event in events:
            yield from getattr(self, "_" + event[0])(*event[1:])

    def decides(self, order: str) -> Iterator[Line]:
        """Yields the ingredients turned up before ``order``, then the line saying its
        owner is asked what to do with it."""
        at = yield from self._turn_up_to(order)
        owner = self.game.owner(order)
        yield Line(
            "decides",
            f"{order} of {self.who(owner)} meets {cards(self.table)}: its owner decides",
            owner,
            at,
        )

    # -- turns ------------------------------------------------------------------------

    def _round(self, number: int, first: int) -> Iterator[Line]:
        if number > 1:
            yield from self._leftovers()
            # R-NEXT-1: the leftovers are the next round's oven, in canonical order.
            self.oven = [INGREDIENTS[k] for k in range(5) for _ in range(self.table[k])]
            self.table = [0, 0, 0, 0, 0]
        self.next, self.used, self.holder, self.resolving = 0, 0, None, False
        self.round = number
        supply = len(self.game.supply)
        carried = f"; the oven holds {len(self.oven)} cards left over" if self.oven else ""
        yield Line(
            "round",
            f"Round {number}: {self.who(first)} starts; the supply holds {supply} cards{carried}",
            first,
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
    ) -> Iterator[Line]:
        start = len(self.oven)
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
        yield Line("turn", text, seat, start if len(self.oven) > start else None)

    def _round_end(self, number: int, stalemate: bool) -> Iterator[Line]:
        why = "every player passed (stalemate, R-TURN-8)" if stalemate else "the supply is empty"
        by = (
            f"{self.who(self.holder)} turns the oven over"
            if self.holder is not None
            else "the oven is turned over"
        )
        self.next, self.table, self.resolving = 0, [0, 0, 0, 0, 0], True
        yield Line(
            "round_end", f"Round {number} ends: {why}; {by} ({len(self.oven)} cards)", self.holder
        )

    # -- resolution -------------------------------------------------------------------

    def _turn_up(self) -> Line:
        """Returns the line of the next oven card turned up onto the table."""
        card = self.oven[self.next]
        self.table[KIND_INDEX[card]] += 1
        self.next += 1
        return Line("turned_up", f"{card} turns up onto the table", at=self.next - 1)

    def _turn_up_to(self, order: str) -> Generator[Line, None, int]:
        """Yields the ingredients turned up before ``order``; returns its oven index."""
        at = self.oven.index(order)
        while self.next < at:
            yield self._turn_up()
        self.next = max(self.next, at + 1)
        return at

    def _bake(
        self,
        seat: int,
        order: str,
        ingredient: str | None,
        hand: Sequence[int] | None,
        auto: bool,
        from_table: Sequence[int],
    ) -> Iterator[Line]:
        at = yield from self._turn_up_to(order)
        text = f"{order} of {self.who(self.game.owner(order))} meets {cards(self.table)}: baked"
        if ingredient:
            text += f" with {ingredient}"
        parts = []
        if any(from_table):
            parts.append(f"{cards(from_table)} from the table")
        if hand:
            parts.append(f"{cards(hand)} from hand")
        text += ", " + " and ".join(parts)
        if auto:
            text += " (no choice to make)"
        for k, n in enumerate(from_table):
            self.table[k] -= n
        self.used += sum(from_table) + (sum(hand) if hand else 0)
        yield Line("bake", text, seat, at)

    def _fail(self, seat: int, order: str, declined: bool) -> Iterator[Line]:
        at = yield from self._turn_up_to(order)
        why = "declined by its owner" if declined else "cannot be baked"
        owner = self.game.owner(order)
        yield Line(
            "fail",
            f"{order} of {self.who(owner)} meets {cards(self.table)}: {why}, back under the waiter",
            seat,
            at,
        )

    def _leftovers(self) -> Iterator[Line]:
        while self.next < len(self.oven):
            yield self._turn_up()
        yield Line("leftovers", f"left on the table: {cards(self.table)}")

    def _over(self) -> Iterator[Line]:
        yield from self._leftovers()
        yield Line("over", "Game over after three rounds")
