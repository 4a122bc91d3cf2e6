"""Ratings: OpenSkill's Plackett-Luce model for free-for-all matches with ties.

Every ladder match is a free-for-all of 2 to 5 bots. A match's ranks (1 best,
equal results share a rank, R-END-2) go to the model as they are, so a shared win
is a tie. The conservative rating shown in the standings is ``mu - 3 * sigma``: a
new bot starts at 0 and climbs as the model grows sure of it.

Ratings are a pure function of the ordered results: :func:`replay` recomputes them
from scratch, and the ladder applies the same :func:`rate` to each stored result,
in finish order, exactly once (see ``store.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from openskill.models import PlackettLuce

#: How far two ratings may differ and still agree (rerate vs. stored ratings).
TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True)
class Rating:
    """A bot's skill estimate: the mean ``mu`` and the deviation ``sigma``."""

    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """Returns ``mu - 3 * sigma``, the rating the standings rank by."""
        return self.mu - 3.0 * self.sigma

    def agrees(self, other: Rating) -> bool:
        """Returns True when both numbers match ``other``'s within :data:`TOLERANCE`."""
        return abs(self.mu - other.mu) <= TOLERANCE and abs(self.sigma - other.sigma) <= TOLERANCE


@cache
def _model() -> PlackettLuce:
    return PlackettLuce()


def initial() -> Rating:
    """Returns the rating of a bot that has not played yet (mu 25, sigma 25/3)."""
    model = _model()
    return Rating(model.mu, model.sigma)


def rate(ratings: Sequence[Rating], ranks: Sequence[int]) -> list[Rating]:
    """Returns the ratings after one match, seat by seat.

    ``ratings[i]`` and ``ranks[i]`` belong to seat ``i``; ranks are 1 best and equal
    ranks tie. Raises ValueError for fewer than two seats or mismatched lengths.
    """
    if len(ratings) < 2 or len(ratings) != len(ranks):
        raise ValueError(
            f"a rated match needs 2+ seats with one rank each, "
            f"got {len(ratings)} ratings and {len(ranks)} ranks"
        )
    model = _model()
    teams = [[model.create_rating([r.mu, r.sigma])] for r in ratings]
    rated = model.rate(teams, ranks=[float(k) for k in ranks])
    return [Rating(team[0].mu, team[0].sigma) for team in rated]


@dataclass(frozen=True, slots=True)
class Result:
    """One finished match as the ratings see it: names and ranks in seat order."""

    names: tuple[str, ...]
    ranks: tuple[int, ...]


def replay(results: Iterable[Result]) -> dict[str, Rating]:
    """Returns every bot's rating after ``results``, applied in the order given."""
    ratings: dict[str, Rating] = {}
    for result in results:
        before = [ratings.get(name, initial()) for name in result.names]
        for name, after in zip(result.names, rate(before, result.ranks), strict=True):
            ratings[name] = after
    return ratings
