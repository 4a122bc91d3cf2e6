"""Places: PlayMatches calls that an organiser seats in the matches it creates.

A client sends ``wait`` on a PlayMatches call instead of its first ``sit``; the call
becomes a place, known by a secret token the server sends back (``Waiting.place``).
A CreateMatch request that names one place per seat (``CreateMatchRequest.places``)
seats those calls at once, so the match starts without a round trip to the client
for its ``sit``s: under load each round trip waits its turn behind every decision
in play (docs/performance.md, "Where a decision's time goes").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .runner import Runner
from .tokens import new_token


class Seatable(Protocol):
    """The call behind a place."""

    @property
    def offered(self) -> bool:
        """Whether a seat waits already for the call's match in play to end."""

    def offer(self, runner: Runner, seat: int) -> None:
        """Seats the call in ``seat`` of ``runner``'s match (joined): at once between
        matches, else once its match in play has ended."""


class PlaceError(Exception):
    """A CreateMatch request's places are refused: ``busy`` for a place that has a
    seat waiting already, else the places named are wrong."""

    def __init__(self, message: str, busy: bool = False) -> None:
        super().__init__(message)
        self.busy = busy


class Places:
    """The open places of a server, by token."""

    def __init__(self) -> None:
        self._calls: dict[str, Seatable] = {}

    def add(self, call: Seatable) -> str:
        """Returns the token of a new place for ``call``."""
        # As a seat token: hex, so that it never begins with a dash that a command
        # line (``mammamia match create --places``) would take for an option.
        token = new_token()
        self._calls[token] = call
        return token

    def remove(self, token: str) -> None:
        """Forgets a place whose call has ended."""
        self._calls.pop(token, None)

    def calls(self, tokens: Sequence[str], players: int) -> list[Seatable]:
        """Returns the call of each place ``tokens`` name, one per seat of a match of
        ``players``; raises PlaceError (nothing is seated)."""
        tokens = list(tokens)
        if len(tokens) != players:
            raise PlaceError(f"places: one per seat ({players}), got {len(tokens)}")
        calls = []
        for i, token in enumerate(tokens):
            call = self._calls.get(token)
            if call is None:
                raise PlaceError(
                    f"places[{i}]: no open place has this token (its "
                    f"PlayMatches call has ended, or it was never given)"
                )
            if token in tokens[:i]:
                raise PlaceError(
                    f"places[{i}]: the place of places[{tokens.index(token)}] "
                    f"again; a call plays one seat at a time"
                )
            if call.offered:
                raise PlaceError(
                    f"places[{i}]: the place has a seat waiting already, for "
                    f"when its match in play ends",
                    busy=True,
                )
            calls.append(call)
        return calls
