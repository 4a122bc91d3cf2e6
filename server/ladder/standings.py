"""The ladder's standings, computed once for every reader: the Ladder service (and
through it ``mammamia ladder standings`` and the demo) and the web page.

A line is a bot's standing as stored, ranked by its conservative rating
``mu - 3 sigma`` (``ratings.py``), with how sure the ladder is of it
(``confidence.py``): its interval ``mu ± 2 sigma`` (:data:`confidence.WIDTH`), and
the probability that it is better than the bot just below it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..db.ladder.rows import Standing
from .confidence import interval, p_better
from .ratings import Rating


@dataclass(frozen=True, slots=True)
class Line:
    """One bot's line: its standing, its interval (``low`` to ``high``), and
    ``p_better``, the probability that it is better than the next line's bot (None
    for the last line)."""

    standing: Standing
    low: float
    high: float
    p_better: float | None


def lines(table: Sequence[Standing]) -> list[Line]:
    """Returns the lines of ``table`` (standings best first), in its order."""
    ratings = [Rating(s.mu, s.sigma) for s in table]
    out = []
    for i, (standing, rating) in enumerate(zip(table, ratings, strict=True)):
        low, high = interval(rating)
        below = ratings[i + 1] if i + 1 < len(ratings) else None
        out.append(Line(standing, low, high, None if below is None else p_better(rating, below)))
    return out
