"""A finished match's game record as the steps of the replay viewer.

The record is replayed with the rules package (``Record.states``) and its public
events are followed as ``mammamia.show`` follows them, so that every step shows one
thing happening: a turn (the oven grows by the cards it put in), a round ending
(the oven is turned over), one card of a resolution turned up (an ingredient onto
the table, or an order, baked or failed), the game's end with its scores. Each
step carries the whole picture: the oven and what of it is turned up, the table,
every seat's hand, waiter and delivered pile. Hands are in it because the match
has ended and its record, deal included, is public; the viewer shows them face down
unless asked. Only ever called with a stored record of an ended match.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mammamia import State
from mammamia.cards import INGREDIENTS, KIND_INDEX
from mammamia.record import Record, loads

Step = dict[str, Any]


def replay(record_text: str, names: Sequence[str] = ()) -> dict[str, Any]:
    """Returns the replay of a record (JSON-ready): the seats, the steps and the
    scores; raises RecordError (a ValueError) for a record that breaks a rule."""
    record = loads(record_text)
    walk = _Walk(record, list(names) or _names(record))
    return walk.run()


def _names(record: Record) -> list[str]:
    names = record.meta.get("names")
    if isinstance(names, list) and len(names) == record.players:
        return [str(n) for n in names]
    return [f"seat {i}" for i in range(record.players)]


class _Walk:
    """Follows the oven, the table and the delivered piles from the public events,
    and the hands from the state at each action, writing a step for each thing seen."""

    def __init__(self, record: Record, names: list[str]) -> None:
        self.record = record
        self.names = names
        self.steps: list[Step] = []
        self.state: State | None = None
        self.round = 1
        self.phase = "turn"
        self.oven: list[str] = []
        self.revealed: int | None = None  # cards turned up while resolving
        self.marks: dict[int, str] = {}  # oven index: baked | failed | deciding
        self.table = [0, 0, 0, 0, 0]
        self.used = 0
        self.holder: int | None = None
        self.delivered: list[list[str]] = [[] for _ in range(record.players)]

    def who(self, seat: int) -> str:
        assert self.state is not None
        return f"{self.names[seat]} ({self.state.colours[seat]})"

    def run(self) -> dict[str, Any]:
        seen = 0
        for index, state in enumerate(self.record.states()):
            self.state = state
            if index == 0:
                first = state.to_act
                assert first is not None
                self.step(
                    f"The deal: every player holds 6 ingredients and 1 order; "
                    f"{self.who(first)} begins",
                    actor=first,
                )
            for event in state.events[seen:]:
                getattr(self, "_" + event[0])(*event[1:])
            seen = len(state.events)
            if state.deciding is not None:
                at = self.reveal_to(state.deciding)
                self.marks[at] = "deciding"
                seat = state.owner(state.deciding)
                self.step(f"{state.deciding} turns up: {self.who(seat)} decides", at, seat)
        assert self.state is not None
        return {
            "players": self.record.players,
            "colours": list(self.state.colours),
            "names": self.names,
            "steps": self.steps,
            "scores": self.scores(),
        }

    def scores(self) -> dict[str, Any] | None:
        state = self.state
        assert state is not None
        if not state.is_over:
            return None
        return {
            "pizzas": [p for p, _ in state.scores()],
            "ingredients": [n for _, n in state.scores()],
            "ranks": state.ranking(),
            "winners": state.winners(),
        }

    def step(self, text: str, focus: int | None = None, actor: int | None = None) -> None:
        """Appends a step: the picture as it is now, with what just happened."""
        state = self.state
        assert state is not None
        self.steps.append(
            {
                "text": text,
                "round": self.round,
                "phase": self.phase,
                "actor": actor,
                "focus": focus,
                "oven": list(self.oven),
                "revealed": self.revealed,
                "marks": {str(k): v for k, v in self.marks.items()},
                "table": list(self.table),
                "used": self.used,
                "supply": len(state.supply),
                "holder": self.holder,
                "seats": [
                    {
                        "hand": list(state.hand_ings[s]),
                        "orders": list(state.hand_orders[s]),
                        "waiter": len(state.waiters[s]),
                        "delivered": list(self.delivered[s]),
                    }
                    for s in range(state.players)
                ],
            }
        )

    # -- the resolution, card by card -------------------------------------------------

    def reveal_to(self, order: str) -> int:
        """Returns the oven index of ``order`` after turning up, one step each, the
        ingredients before it."""
        at = self.oven.index(order)
        assert self.revealed is not None
        while self.revealed < at:
            self.reveal_one()
        self.revealed = max(self.revealed, at + 1)
        return at

    def reveal_one(self) -> None:
        assert self.revealed is not None
        card = self.oven[self.revealed]
        self.table[KIND_INDEX[card]] += 1
        self.revealed += 1
        self.step(f"{card} turns up onto the table", self.revealed - 1)

    def reveal_rest(self) -> None:
        if self.revealed is None:
            return
        while self.revealed < len(self.oven):
            self.reveal_one()

    # -- the events (mammamia.state: State.events) -----------------------------------

    def _round(self, number: int, first: int) -> None:
        if number == 1:
            return  # the deal's step says who begins
        self.reveal_rest()
        # R-NEXT-1: the table's leftovers are the new oven, in canonical order.
        self.oven = [INGREDIENTS[k] for k in range(5) for _ in range(self.table[k])]
        self.table = [0, 0, 0, 0, 0]
        self.revealed, self.marks, self.used, self.holder = None, {}, 0, None
        self.round, self.phase = number, "turn"
        left = f"; {len(self.oven)} cards left over lie in the oven" if self.oven else ""
        self.step(f"Round {number}: {self.who(first)} begins{left}", actor=first)

    def _turn(
        self,
        seat: int,
        kind: str | None,
        count: int,
        order: str | None,
        draw: str | None,
        drawn: int,
        mamma_mia: bool,
    ) -> None:
        start = len(self.oven)
        if kind is None:
            text = f"{self.who(seat)} passes"
        else:
            text = f"{self.who(seat)} plays {count} {kind}"
            self.oven += [kind] * count
        if order:
            text += f" and the order {order}"
            self.oven.append(order)
        if mamma_mia:
            self.holder = seat
            text += ", draws the Mamma Mia! card"
            if drawn:
                text += f" and {drawn} more"
        elif draw:
            text += f", draws {drawn} from the {draw}"
        self.step(text, start if len(self.oven) > start else None, seat)

    def _round_end(self, number: int, stalemate: bool) -> None:
        why = "every player passed" if stalemate else "the supply is empty"
        self.phase, self.revealed, self.marks = "resolve", 0, {}
        self.table = [0, 0, 0, 0, 0]
        by = (
            f"{self.who(self.holder)} turns the oven over"
            if self.holder is not None
            else "the oven is turned over"
        )
        self.step(f"Round {number} ends ({why}): {by}", actor=self.holder)

    def _bake(
        self,
        seat: int,
        order: str,
        ingredient: str | None,
        hand: Sequence[int] | None,
        auto: bool,
        from_table: Sequence[int],
    ) -> None:
        at = self.reveal_to(order)
        self.marks[at] = "baked"
        for k, n in enumerate(from_table):
            self.table[k] -= n
        self.used += sum(from_table) + (sum(hand) if hand else 0)
        self.delivered[seat].append(order)
        text = f"{order} of {self.who(seat)} is baked"
        if ingredient:
            text += f" with {ingredient}"
        if hand:
            text += (
                " ("
                + ", ".join(f"{n} {INGREDIENTS[k]}" for k, n in enumerate(hand) if n)
                + " from hand)"
            )
        self.step(text, at, seat)

    def _fail(self, seat: int, order: str, declined: bool) -> None:
        at = self.reveal_to(order)
        self.marks[at] = "failed"
        why = "declined" if declined else "fails"
        self.step(f"{order} of {self.who(seat)} {why}: back under the waiter", at, seat)

    def _over(self) -> None:
        self.reveal_rest()
        self.phase = "over"
        assert self.state is not None
        pizzas = [len(d) for d in self.delivered]
        best = " and ".join(self.who(s) for s in self.state.winners())
        self.step(
            f"Game over after three rounds: {best} "
            f"win{'s' if len(self.state.winners()) == 1 else ''} "
            f"({', '.join(str(p) for p in pizzas)} pizzas)"
        )
