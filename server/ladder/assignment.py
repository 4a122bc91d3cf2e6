"""A seat the ladder gives a bot, as the ladder hands it to the bot's stream.

Its own module, importing nothing of the server, so that what describes it on the
wire (``server.wire``) needs nothing else of the ladder.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Assignment:
    """A seat the ladder gives a bot: play it with the Seat service and this token, on
    the host at ``host_address`` (empty: the host the bot entered through)."""

    match_id: str
    seat_token: str
    seat: int
    players: int
    commitment: str = ""  # the match's commitment to its seed (a set's)
    set_id: str | None = None  # the duplicate set it belongs to, if any
    set_index: int = 0  # its place in the set (= the seats' rotation)
    host_address: str = ""
