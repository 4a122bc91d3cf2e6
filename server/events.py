"""The entries of a match's one event log, and the decisions it asks.

A match appends an entry for everything that happens in it, in order; what a seat
or a spectator receives is derived from this log by ``server.visibility``. Two
kinds are public and numbered (their ``sequence`` is their place among the
numbered entries, 1, 2, 3, ... the same for every viewer): ``Happened`` (a game
event of the rules engine) and ``Defaulted`` (the server decided for a late seat).
Two are not numbered: ``Asked`` (a decision asked of one seat, seen by that seat
only) and ``Ended`` (the match's end, once its record is stored).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mammamia import Event, State, View
from mammamia.actions import Action

from .status import MatchStatus


@dataclass(slots=True, eq=False)
class Decision:
    """A decision asked of one seat.

    ``view`` is the seat's view when asked (without history; None once the decision
    is closed, when nothing sends it any more); ``seats`` holds each
    seat's (name, strikes, autopilot) at that moment, as the view shows them.
    ``deadline`` is in UNIX seconds; the default applies at ``deadline`` plus the
    seat's time bank (``Match.default_at``).
    """

    id: str
    seat: int
    resolve: bool
    options: tuple[Action, ...]
    view: View | None
    seats: tuple[tuple[str, int, bool], ...]
    asked: float
    deadline: float
    encoded_view: bytes | None = field(default=None, repr=False)  # cached by server.wire


@dataclass(slots=True, eq=False)
class Happened:
    """A public game event (R-VIEW-1), numbered."""

    sequence: int
    event: Event
    encoded: bytes | None = field(default=None, repr=False)  # cached by server.wire


@dataclass(slots=True, eq=False)
class Defaulted:
    """The server applied ``action`` for ``seat`` at the decision's default time.

    ``reason`` is ``late`` (a stream to the seat was open) or ``disconnected``;
    ``strikes`` counts the seat's deadlines in a row, this one included;
    ``autopilot`` is true when this strike handed the seat to the default policy.
    """

    sequence: int
    seat: int
    decision_id: str
    reason: str
    strikes: int
    autopilot: bool
    action: Action
    encoded: bytes | None = field(default=None, repr=False)  # cached by server.wire


@dataclass(slots=True, eq=False)
class Asked:
    """A decision was asked of its seat (seen by that seat alone)."""

    decision: Decision


@dataclass(slots=True, eq=False)
class Started:
    """The match started and its game was dealt (a match that deals at its start):
    every stream sends its viewer a fresh snapshot of ``state``, the game as dealt,
    after the ``sequence`` numbered entries before it."""

    sequence: int
    state: State


@dataclass(slots=True, eq=False)
class Ended:
    """The match ended and its record is stored; ``status`` is finished or aborted."""

    status: MatchStatus
    winners: tuple[int, ...]
    delivered: tuple[int, ...]
    ranks: tuple[int, ...]
    reason: str | None


Numbered = Happened | Defaulted
Entry = Happened | Defaulted | Asked | Started | Ended
