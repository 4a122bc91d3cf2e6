"""What each viewer may see of a match: the one place that decides it (R-VIEW-*).

A viewer is a seat number, or None for a spectator. Everything a stream sends is
derived here from the match's event log (``server.events``) and its game state,
and then encoded by ``server.wire``: public entries (game events, defaults)
reach every viewer alike, a decision request reaches only its seat and only
while it is open, and views come from ``mammamia.view_of``, which copies nothing
the rules hide from the viewer. So two games that differ only in what a viewer
may not know give that viewer the same items.

A bot's notes (``server.notes``) are hidden from everyone but the seat's owner: they
are never in the log, nor in a stored record; :func:`owned_record` is the one place
that puts them into a record, for the seats its caller proved are theirs.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from mammamia import View, view_of

from .events import Asked, Decision, Ended, Entry, Numbered, Started
from .match import Match
from .notes import SeatNotes
from .status import MatchStatus


@dataclass(frozen=True, slots=True)
class FinalView:
    """The end of the match, with the viewer's final view."""

    ended: Ended
    view: View


_NO_CARDS = (0, 0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The match now, for one viewer: the first item of every stream.

    ``history`` are the numbered entries after the viewer's resume point up to
    ``sequence`` (the last numbered entry the snapshot includes); ``decision`` the
    viewer's open decision, if any.
    """

    view: View
    sequence: int
    history: tuple[Numbered, ...]
    decision: Decision | None
    status: str


Item = Numbered | Decision | FinalView | Snapshot
"""What a stream sends for one log entry."""


def item(match: Match, entry: Entry, viewer: int | None) -> Item | None:
    """Returns what ``viewer`` receives for a log entry, or None for nothing."""
    if isinstance(entry, Started):
        # The deal was made at the start: the view the stream opened with is replaced.
        # The first decision follows as its own entry.
        return Snapshot(
            view_of(entry.state, viewer, history=False),
            entry.sequence,
            (),
            None,
            MatchStatus.RUNNING,
        )
    if isinstance(entry, Asked):
        d = entry.decision
        # Another seat's request is private; a closed one asks nothing any more.
        return d if d.seat == viewer and d is match.decision else None
    if isinstance(entry, Ended):
        return final(match, entry, viewer)
    return entry


def final(match: Match, ended: Ended, viewer: int | None) -> FinalView:
    """Returns the end of the match as ``viewer`` receives it."""
    return FinalView(ended, view_of(match.state, viewer, history=False))


def snapshot(match: Match, viewer: int | None, after: int) -> Snapshot:
    """Returns the snapshot that opens a stream resuming after sequence ``after``."""
    numbered = match.numbered
    d = match.decision
    view = view_of(match.state, viewer, history=False)
    if match.status == MatchStatus.WAITING and match.deals_at_start:
        view = _undealt(view)
    return Snapshot(
        view,
        len(numbered),
        tuple(numbered[max(0, after) :]),
        d if d is not None and d.seat == viewer else None,
        match.status,
    )


def _undealt(view: View) -> View:
    """Returns ``view`` with no card of the seat's own and no one to act: the game is
    dealt when the match starts, so the cards of the state held until then are no
    one's (what else a view shows at the start, counts and colours, is the same
    whatever the deal)."""
    return replace(view, to_act=None, hand=_NO_CARDS, hand_orders=(), waiter=(), legal=())


def owned_record(record: str, notes: Sequence[SeatNotes], seats: Collection[int]) -> str:
    """Returns ``record`` (JSON text of a stored record, which carries no note) with the
    notes of ``seats``, the seats its reader owns, in ``meta.notes``: one object per
    note, ``{"action": index in actions, "seat": seat, "note": text}``, in the order
    taken. Returns ``record`` unchanged when those seats left no note."""
    owned = sorted(
        (index, n.seat, note) for n in notes if n.seat in seats for index, note in n.notes
    )
    if not owned:
        return record
    data = json.loads(record)
    meta = data.setdefault("meta", {})
    meta["notes"] = [{"action": index, "seat": seat, "note": note} for index, seat, note in owned]
    return json.dumps(data)
