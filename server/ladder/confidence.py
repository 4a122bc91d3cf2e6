"""How sure the ladder is of its standings: rating intervals and neighbours' odds.

The rating model (OpenSkill's Plackett-Luce, ``ratings.py``) holds each bot's skill
as a normal belief, mean ``mu`` and deviation ``sigma``; in a match each bot
performs at its skill plus noise of deviation ``beta`` (25/6), and the order of
the performances is the result. Two questions follow from that belief alone:

- **How good is this bot?** :func:`interval` is ``mu ± 2 sigma``, the model's
  belief at about 95% (a normal belief; the model states no interval of its own).
- **Is the higher of two neighbours really better?** :func:`p_better` is the
  probability that the higher's skill exceeds the lower's,
  ``Phi((mu_h - mu_l) / sqrt(sigma_h² + sigma_l²))``. The model keeps no
  correlation between bots, so their beliefs are taken as independent.

The library's own prediction, ``PlackettLuce.predict_win``, answers a different
question: who wins the *next* match, performance noise included
(``Phi((mu_a - mu_b) / sqrt(2 beta² + sigma_a² + sigma_b²))`` for two bots). It
stays far from 1 for bots that are close however sure the ladder is of them, so it
cannot say whether an order is settled; :func:`p_wins` gives it beside the other.

:func:`neighbours` applies both to the standings, in their order (conservative
rating, best first), each bot against the one just below it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist

from openskill.models import PlackettLuce

from .ratings import Rating

#: The interval's half width, in sigmas: ``mu ± 2 sigma`` holds about 95% of the belief.
WIDTH = 2.0

_NORMAL = NormalDist()


@cache
def _model() -> PlackettLuce:
    return PlackettLuce()


def interval(rating: Rating, width: float = WIDTH) -> tuple[float, float]:
    """Returns ``(mu - width * sigma, mu + width * sigma)``, the rating's interval."""
    return rating.mu - width * rating.sigma, rating.mu + width * rating.sigma


def p_better(higher: Rating, lower: Rating) -> float:
    """Returns the model's probability that ``higher``'s skill exceeds ``lower``'s.

    0.5 for equal beliefs; near 1 when ``higher``'s mu is well above ``lower``'s for
    their sigmas; below 0.5 when ``higher`` is in fact the lower mu.
    """
    spread = math.hypot(higher.sigma, lower.sigma)
    if spread == 0.0:
        # Certain beliefs (never from the model, whose sigma stays above tau).
        return 1.0 if higher.mu > lower.mu else 0.0 if higher.mu < lower.mu else 0.5
    return _NORMAL.cdf((higher.mu - lower.mu) / spread)


def p_wins(a: Rating, b: Rating) -> float:
    """Returns the model's probability that ``a`` beats ``b`` in their next 2-player
    match (OpenSkill's ``predict_win``)."""
    model = _model()
    teams = [[model.create_rating([a.mu, a.sigma])], [model.create_rating([b.mu, b.sigma])]]
    return float(model.predict_win(teams)[0])


@dataclass(frozen=True, slots=True)
class Confidence:
    """One bot's line of confidence in the standings.

    ``low`` and ``high`` bound its interval (:func:`interval`); ``p_better`` is the
    probability that it is really better than the bot just below it, and
    ``p_wins`` the probability that it beats that bot in a 2-player match (both
    None for the last bot).
    """

    low: float
    high: float
    p_better: float | None
    p_wins: float | None


def neighbours(standings: Sequence[Rating]) -> list[Confidence]:
    """Returns one :class:`Confidence` per bot of ``standings`` (in the order given,
    best first), each bot compared with the next."""
    lines = []
    for i, rating in enumerate(standings):
        low, high = interval(rating)
        below = standings[i + 1] if i + 1 < len(standings) else None
        lines.append(
            Confidence(
                low,
                high,
                None if below is None else p_better(rating, below),
                None if below is None else p_wins(rating, below),
            )
        )
    return lines


def weakest(standings: Sequence[Rating]) -> float:
    """Returns the least :func:`p_better` between neighbours of ``standings`` (best
    first): the confidence of the whole order. 1.0 for fewer than two bots."""
    return min((p_better(a, b) for a, b in itertools.pairwise(standings)), default=1.0)
