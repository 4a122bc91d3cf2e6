"""A game record as a human-readable log, one line per event (``mammamia show``)."""

from __future__ import annotations

from collections.abc import Iterator

from .actions import Counts
from .cards import INGREDIENTS
from .record import Record, _apply


def _cards(counts: Counts | None) -> str:
    if not counts:
        return ""
    return ", ".join(f"{n} {INGREDIENTS[k]}" for k, n in enumerate(counts) if n)


def show(record: Record) -> Iterator[str]:
    """Yields the log lines of a record's game; raises RecordError where it breaks a rule."""
    state = record.start()
    names = record.meta.get("names") if isinstance(record.meta.get("names"), list) else None

    def who(seat: int) -> str:
        label = f"seat {seat} ({state.colours[seat]})"
        return f"{label} {names[seat]}" if names and seat < len(names) else label

    yield (f"Mamma Mia! for {record.players} players: "
           + ", ".join(who(i) for i in range(state.players)))
    seen = 0
    steps = iter(enumerate(record.actions))
    while True:
        for event in state.events[seen:]:
            yield from _describe(event, state, who)
        seen = len(state.events)
        step = next(steps, None)
        if step is None:
            break
        index, (seat, action) = step
        if state.phase == "resolve":
            yield f"    {who(seat)} decides: {action}"
        _apply(state, index, seat, action)
    if state.is_over:
        ranks = state.ranking()
        for seat in sorted(range(state.players), key=lambda s: ranks[s]):
            pizzas, ings = state.scores()[seat]
            yield (f"#{ranks[seat]} {who(seat)}: {pizzas} pizzas delivered, "
                   f"{ings} ingredients in hand")
        yield "Winner: " + " and ".join(who(s) for s in state.winners())


def _describe(event: tuple, state, who) -> Iterator[str]:  # type: ignore[no-untyped-def,type-arg]
    tag = event[0]
    if tag == "round":
        yield f"== Round {event[1]}: {who(event[2])} starts"
    elif tag == "turn":
        _, seat, kind, count, order, draw, drawn, mamma_mia = event
        text = f"{who(seat)} " + ("passes" if kind is None else f"plays {count} {kind}")
        if order:
            text += f" and order {order}"
        if draw:
            text += f"; draws {drawn} from the {draw}"
        if mamma_mia:
            text += " and the Mamma Mia! card"
        yield text
    elif tag == "round_end":
        why = "stalemate (R-TURN-8)" if event[2] else "the supply is empty"
        yield f"== Round {event[1]} ends: {why}; the oven is resolved"
    elif tag == "bake":
        _, seat, order, ingredient, hand, _auto = event
        text = f"  {order} of {who(seat)} is baked"
        if ingredient:
            text += f" with {ingredient}"
        if hand:
            text += f", adding {_cards(hand)} from hand"
        else:
            text += " from the table"
        yield text
    elif tag == "fail":
        _, seat, order, declined = event
        yield f"  {order} of {who(seat)} fails{' (declined)' if declined else ''}"
    elif tag == "over":
        yield "== Game over"
