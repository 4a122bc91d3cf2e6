"""Matches for ladder tests that play none: they know the stored ends they are given
(what a crashed server left), and refuse to create or play one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from server.ladder.matches import MatchEnd
from server.notes import SeatNotes


class NoMatches:
    """The server's matches, never asked for one; ``stored`` are the ends it has
    stored (by match id)."""

    def __init__(self, stored: Mapping[str, MatchEnd] | None = None) -> None:
        self.stored = dict(stored or {})

    async def create(
        self,
        names: Sequence[str],
        deal_set: object = None,
        *,
        match_id: str | None = None,
        tokens: Sequence[str] | None = None,
    ) -> tuple[str, list[str], str]:
        raise AssertionError("no match is created in these tests")

    async def result(self, match_id: str) -> MatchEnd:
        raise AssertionError("no match is played in these tests")

    def stored_result(self, match_id: str) -> MatchEnd | None:
        return self.stored.get(match_id)

    def record(self, match_id: str) -> str | None:
        return None

    def notes(self, match_id: str) -> Sequence[SeatNotes]:
        return ()

    def commitment(self, match_id: str) -> str:
        return ""
