"""A finished match's game record as the steps of the replay viewer.

The record is replayed with the rules package (``Record.states``) and told by the
game's one narrator (``mammamia.narrator``, the text log's too), so that every step
shows one thing happening, in the log's words: a round starting, a turn (the oven
grows by the cards it put in), a round ending (the oven is turned over), one card of
a resolution turned up (an ingredient onto the table, or an order, baked or failed),
the leftovers, the game's end with its scores. Each step carries the whole picture:
the oven and what of it is turned up, the table, every seat's hand, waiter and
delivered pile. Hands are in it because the match has ended and its record, deal
included, is public; the viewer shows them face down unless asked. Only ever called
with a stored record of an ended match.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from mammamia import State
from mammamia.narrator import Line, Narrator
from mammamia.record import Record, loads

Step = dict[str, Any]

_MARKS = {"bake": "baked", "fail": "failed", "decides": "deciding"}


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
    return []


class _Walk:
    """Writes a step for each of the narrator's lines, with the hands from the state at
    each action and the delivered piles and marks from the lines."""

    def __init__(self, record: Record, names: list[str]) -> None:
        self.record = record
        self.names = names
        self.steps: list[Step] = []
        self.state: State | None = None
        self.narrator: Narrator | None = None
        self.round = 1
        self.phase = "turn"
        self.marks: dict[int, str] = {}  # oven index: baked | failed | deciding
        self.delivered: list[list[str]] = [[] for _ in range(record.players)]

    def run(self) -> dict[str, Any]:
        seen = 0
        for state in self.record.states():
            self.state = state
            if self.narrator is None:
                self.narrator = Narrator(state, self.names)
            self.follow(self.narrator.lines(state.events[seen:]))
            seen = len(state.events)
            if state.deciding is not None:
                self.follow(self.narrator.decides(state.deciding))
        assert self.state is not None
        return {
            "players": self.record.players,
            "colours": list(self.state.colours),
            "names": self.names or [f"seat {i}" for i in range(self.record.players)],
            "steps": self.steps,
            "scores": self.scores(),
        }

    def follow(self, lines: Iterable[Line]) -> None:
        """Appends a step per line, the picture taken as the line is said."""
        narrator = self.narrator
        assert narrator is not None
        for line in lines:
            if line.kind == "round":
                self.round, self.phase, self.marks = narrator.round, "turn", {}
            elif line.kind == "round_end":
                self.phase, self.marks = "resolve", {}
            elif line.kind == "over":
                self.phase = "over"
            if line.kind in _MARKS and line.at is not None:
                self.marks[line.at] = _MARKS[line.kind]
            if line.kind == "bake" and line.seat is not None and line.at is not None:
                self.delivered[line.seat].append(narrator.oven[line.at])
            text = line.text + (self.winners() if line.kind == "over" else "")
            self.step(text, line.at, line.seat)

    def winners(self) -> str:
        """Returns who won, and the pizzas delivered, said after the game's end."""
        assert self.state is not None and self.narrator is not None
        winners = self.state.winners()
        best = " and ".join(self.narrator.who(s) for s in winners)
        pizzas = ", ".join(str(len(d)) for d in self.delivered)
        return f": {best} win{'s' if len(winners) == 1 else ''} ({pizzas} pizzas)"

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
        state, narrator = self.state, self.narrator
        assert state is not None and narrator is not None
        self.steps.append(
            {
                "text": text,
                "round": self.round,
                "phase": self.phase,
                "actor": actor,
                "focus": focus,
                "oven": list(narrator.oven),
                "revealed": narrator.next if narrator.resolving else None,
                "marks": {str(k): v for k, v in self.marks.items()},
                "table": list(narrator.table),
                "used": narrator.used,
                "supply": len(state.supply),
                "holder": narrator.holder,
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
