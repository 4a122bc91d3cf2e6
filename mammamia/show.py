"""A game record as a human-readable log, one line per event (``mammamia show``).

The log is the narrator's (``mammamia.narrator``), written from the game's public
events alone (R-VIEW-1): who played what and drew from where, and at each resolution
every order as it is revealed, with the table it meets and what became of it. It
never shows a hand or the supply.

An owner's record also carries the notes its bot left (``meta.notes``, docs/record.md):
each is printed, marked ``note``, right after the lines of the decision it was left on.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .narrator import Line, Narrator
from .record import Record, _apply

_HEADINGS = frozenset({"round", "round_end", "over"})
_RESOLUTION = frozenset({"bake", "fail", "leftovers"})


def log_line(line: Line) -> str | None:
    """Returns a narrator's line as the log prints it: rounds as headings, a
    resolution indented; None for an ingredient turned up (an order's line names the
    table it meets) and for a decision asked (the decision's outcome follows)."""
    if line.kind in ("turned_up", "decides"):
        return None
    if line.kind in _HEADINGS:
        return "== " + line.text
    if line.kind in _RESOLUTION:
        return "  " + line.text
    return line.text


def log_lines(lines: Iterable[Line]) -> Iterator[str]:
    """Yields the log's lines of a narrator's lines."""
    for line in lines:
        text = log_line(line)
        if text is not None:
            yield text


def show(record: Record) -> Iterator[str]:
    """Yields the log lines of a record's game; raises RecordError where it breaks a rule."""
    state = record.start()
    names = record.meta.get("names")
    narrator = Narrator(state, names if isinstance(names, list) else None)
    yield narrator.header()
    who = narrator.who
    notes = notes_of(record.meta)
    yield from log_lines(narrator.lines(state.events))
    seen = len(state.events)
    for index, (seat, action) in enumerate(record.actions):
        _apply(state, index, seat, action)
        yield from log_lines(narrator.lines(state.events[seen:]))
        seen = len(state.events)
        for line in notes.get(index, "").splitlines():
            yield f"    note ({who(seat)}): {line}"
    if not state.is_over:
        assert state.to_act is not None
        asked = f"to decide on {state.deciding}" if state.deciding else "to play"
        yield f"(the record stops here, in round {state.round}: {who(state.to_act)} {asked})"
        return
    ranks = state.ranking()
    scores = state.scores()
    for seat in sorted(range(state.players), key=lambda s: (ranks[s], s)):
        pizzas, ings = scores[seat]
        yield (
            f"#{ranks[seat]} {who(seat)}: {pizzas} pizza{'s' * (pizzas != 1)} "
            f"delivered, {ings} ingredient{'s' * (ings != 1)} in hand"
        )
    winners = state.winners()
    yield f"Winner{'s' * (len(winners) > 1)}: " + " and ".join(who(s) for s in winners)


def notes_of(meta: dict[str, Any]) -> dict[int, str]:
    """Returns the notes an owner's record carries (``meta.notes``) by the index of the
    action they were left on; an entry that is not a note is skipped (readers do not
    rely on ``meta``)."""
    notes: dict[int, str] = {}
    entries = meta.get("notes")
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict):
            index, note = entry.get("action"), entry.get("note")
            if isinstance(index, int) and isinstance(note, str):
                notes[index] = note
    return notes
