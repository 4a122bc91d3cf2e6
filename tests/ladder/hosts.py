"""A match host for ladder tests that play no match: it knows the stored outcomes it
is given (what a crashed server left), and refuses to create or play one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from server.ladder.ladder import Outcome


class NoMatchHost:
    """A match host that is never asked for a match; ``stored`` are the outcomes it
    has stored (by match id)."""

    def __init__(self, stored: Mapping[str, Outcome] | None = None) -> None:
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

    async def outcome(self, match_id: str) -> Outcome:
        raise AssertionError("no match is played in these tests")

    def stored_outcome(self, match_id: str) -> Outcome | None:
        return self.stored.get(match_id)

    def record(self, match_id: str) -> str | None:
        return None
