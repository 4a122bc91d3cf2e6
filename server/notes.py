"""A bot's notes: the short private text an answer may carry (``ActRequest.note``).

A note is for its bot's owner alone. The match keeps each accepted answer's note by
the index of the action it answered with (``Match.notes``); the journal writes it
with the answer, so a resumed match still has it; the end of the match stores the
notes per seat beside the record (``server.db.matches``), never inside it, so every
public record is free of them by construction. Only
``server.visibility.owned_record`` puts a seat's notes into a record, for a caller
who proved the seat is theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

NOTE_LIMIT: Final = 1024
"""The most bytes of UTF-8 a note keeps; a longer one is cut (:func:`fitted_note`)."""


def fitted_note(note: str) -> str:
    """Returns ``note`` cut to at most :data:`NOTE_LIMIT` bytes of UTF-8, at a character
    boundary (a note is never a reason to refuse an answer: it is only for debugging)."""
    data = note.encode("utf-8")
    if len(data) <= NOTE_LIMIT:
        return note
    return data[:NOTE_LIMIT].decode("utf-8", errors="ignore")


@dataclass(frozen=True, slots=True)
class SeatNotes:
    """The notes one seat's accepted answers carried, kept with the ended match.

    ``token_hash`` is the hash of the seat's token (``server.inputs.token_hash``), so
    that the seat's token finds them; ``notes`` are (action index in the record's
    ``actions``, note), in the order taken.
    """

    seat: int
    token_hash: str
    notes: tuple[tuple[int, str], ...]


def by_seat(notes: Mapping[int, tuple[int, str]], token_hashes: Sequence[str]) -> list[SeatNotes]:
    """Returns the notes of a match (``Match.notes``) grouped by seat, for the seats
    that left any, with each seat's token hash (empty when unknown)."""
    seats: dict[int, list[tuple[int, str]]] = {}
    for index in sorted(notes):
        seat, note = notes[index]
        seats.setdefault(seat, []).append((index, note))
    return [
        SeatNotes(seat, token_hashes[seat] if seat < len(token_hashes) else "", tuple(taken))
        for seat, taken in sorted(seats.items())
    ]
