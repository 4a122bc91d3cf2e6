"""A match's status: the one set of statuses, in memory, in the database and on the wire."""

from __future__ import annotations

from enum import StrEnum


class MatchStatus(StrEnum):
    """Where a match is in its life: the one set of statuses, in memory, in the
    database (``matches.status``, ``ladder_matches.status``) and on the wire."""

    WAITING = "waiting"
    RUNNING = "running"
    ENDING = "ending"  # over or cut off; the record awaits storage (never stored)
    FINISHED = "finished"
    ABORTED = "aborted"

    @property
    def ended(self) -> bool:
        """Returns whether a match with this status has ended (finished or aborted)."""
        return self in (MatchStatus.FINISHED, MatchStatus.ABORTED)
