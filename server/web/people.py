"""The people's table: people ranked by the ladder's rating model, apart from the bots.

With ``mammamia serve --people-table``, a person may play a game of the play view
for the people's table (its start message says ``"table": true``, with the person's
name): when it finishes, its seats and ranks are stored (``server.db.people``). The
table is a replay of those results in the order they ended, with the ladder's own
model (``server.ladder.ratings``: Plackett-Luce, ranked by mu - 3 sigma, the
interval mu +- 2 sigma): each person is rated by the name they give, and each
opponent (a built-in bot, or a bot entered in the ladder) is rated there too, as
the people's yardstick.
Those ratings are the people's table's alone: the bots' ladder never sees these
matches, and a ladder bot's rating here is not its ladder rating.

A name is not an account: anyone may give any name. The table suits a room that
trusts itself (a club evening, a classroom); docs/web.md says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..db.people import PERSON, PeopleResult
from ..ladder.confidence import interval
from ..ladder.ratings import Rating, initial, rate


@dataclass(frozen=True, slots=True)
class PeopleLine:
    """One line of the people's table: who (kind and name), the rating, its interval,
    games played and won (ranked first, alone or tied)."""

    kind: str
    name: str
    rating: Rating
    games: int
    wins: int

    def json(self, rank: int | None) -> dict[str, Any]:
        """Returns the line as the page's JSON, with its rank (None: not ranked)."""
        low, high = interval(self.rating)
        return {
            "rank": rank,
            "kind": self.kind,
            "name": self.name,
            "rating": round(self.rating.conservative, 3),
            "mu": round(self.rating.mu, 3),
            "sigma": round(self.rating.sigma, 3),
            "low": round(low, 3),
            "high": round(high, 3),
            "games": self.games,
            "wins": self.wins,
        }


def table(results: Sequence[PeopleResult]) -> list[PeopleLine]:
    """Returns every seat's line after ``results`` (in the order given), best first by
    mu - 3 sigma (ties by name)."""
    ratings: dict[tuple[str, str], Rating] = {}
    games: dict[tuple[str, str], int] = {}
    wins: dict[tuple[str, str], int] = {}
    for result in results:
        before = [ratings.get(seat, initial()) for seat in result.seats]
        for seat, rank, after in zip(
            result.seats, result.ranks, rate(before, result.ranks), strict=True
        ):
            ratings[seat] = after
            games[seat] = games.get(seat, 0) + 1
            wins[seat] = wins.get(seat, 0) + (rank == 1)
    lines = [PeopleLine(k, n, r, games[(k, n)], wins[(k, n)]) for (k, n), r in ratings.items()]
    return sorted(lines, key=lambda line: (-line.rating.conservative, line.name, line.kind))


def table_json(results: Sequence[PeopleResult]) -> dict[str, Any]:
    """Returns the people's table as the page's JSON: ``{"matches", "people",
    "opponents"}``; the people ranked from 1, the opponents (the bots they played, by
    their rating on this table) unranked."""
    lines = table(results)
    people = [line for line in lines if line.kind == PERSON]
    return {
        "matches": len(results),
        "people": [line.json(rank) for rank, line in enumerate(people, 1)],
        "opponents": [line.json(None) for line in lines if line.kind != PERSON],
    }
