"""The server's match host as the ladder sees it: a :class:`~server.ladder.ladder.MatchHost`.

Kept apart from :mod:`server.ladder.ladder`, which knows the host only by that
protocol, so the ladder imports nothing of the match machinery (``server.host``,
``server.match``) that in turn describes ladder messages on the wire.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from mammamia.fairness import DealSet
from server.host import Host, HostClosed

from .ladder import LadderClosedError, Outcome


class ServerHost:
    """The server's match host and storage, as the ladder needs them (a MatchHost)."""

    def __init__(self, host: Host, *, deadline_ms: int = 0, start_timeout: float = 10.0) -> None:
        self.host = host
        self.deadline_ms = deadline_ms
        self.start_timeout = start_timeout

    async def create(
        self,
        names: Sequence[str],
        deal_set: tuple[DealSet, str] | None = None,
        *,
        match_id: str | None = None,
        tokens: Sequence[str] | None = None,
    ) -> tuple[str, list[str], str]:
        """Returns (match id, seat tokens, commitment) of a new ladder match (of a
        duplicate set with ``deal_set``), with the given id and tokens when given;
        raises LadderClosedError once the server drains."""
        try:
            match = self.host.create_match(
                len(names),
                names=names,
                ladder=True,
                deadline_ms=self.deadline_ms,
                start_timeout=self.start_timeout,
                deal_set=deal_set,
                match_id=match_id,
                tokens=tokens,
            )
        except HostClosed as e:
            raise LadderClosedError(str(e)) from None
        fair = match.match.fairness
        return match.id, list(match.tokens), fair.commitment if fair is not None else ""

    async def outcome(self, match_id: str) -> Outcome:
        """Returns the outcome once the server has stored the match's record."""
        result = await self.host.result(match_id)
        return Outcome(
            result.status,
            tuple(result.ranks),
            tuple(result.delivered),
            _first_player(result.record),
        )

    def stored_outcome(self, match_id: str) -> Outcome | None:
        """Returns the outcome the server stored for ``match_id``, or None."""
        row = self.host.storage.match(match_id)
        if row is None or row.status not in ("finished", "aborted"):
            return None
        return Outcome(
            row.status,
            tuple(row.ranks),
            tuple(row.delivered),
            _first_player(self.host.storage.record(match_id)),
        )

    def record(self, match_id: str) -> str | None:
        """Returns the stored game record of an ended match, or None."""
        return self.host.storage.record(match_id)


def _first_player(record: str | None) -> int | None:
    """Returns the first player of round 1 a stored record names, or None."""
    try:
        first = json.loads(record)["first_player"] if record else None
    except (ValueError, KeyError, TypeError):
        return None
    return first if isinstance(first, int) else None
