"""A sequential test between two bots: play deal pairs until the evidence decides.

``mammamia arena A B --sprt`` asks one question: is B at least ``elo1`` better
than A, or not better than ``elo0``? It plays **deal pairs**, each deal twice with
the seats swapped, which cancels most of what the deal's luck gives a seat, and
after every pair it updates the log-likelihood ratio (LLR) of "B is ``elo1``
better" against "B is ``elo0`` better". It stops at the first pair after which the
LLR leaves ``(lower, upper)``: above ``upper``, **better**; below ``lower``, **not
better**. The bounds come from the error rates asked for (Wald's):
``lower = ln(beta / (1 - alpha))`` and ``upper = ln((1 - beta) / alpha)``, where
``alpha`` is the chance of calling B better when it is ``elo0`` better, and
``beta`` the chance of missing an ``elo1`` gain.

**The pentanomial model.** A pair's score for B is 0, 1/2, 1, 3/2 or 2 (a win is
1, a shared first place 1/2, a loss 0, per game); the five counts are the
*pentanomial*. Scoring pairs, not games, is what makes the test honest: the two
games of a pair share a deal, so their results are correlated, and the pair's
variance is the one that counts. The LLR is the generalized SPRT's: with ``N``
pairs, mean pair score ``m`` (per game, 0 to 1) and its variance ``v`` per pair,
both measured, and ``s0``, ``s1`` the scores that ``elo0`` and ``elo1`` mean on
the logistic Elo scale (``1 / (1 + 10^(-elo / 400))``),

    LLR = N (s1 - s0) (2 m - s0 - s1) / (2 v)

(the normal approximation chess-engine testers use with the pentanomial model).
The variance is measured with half a pair added to each of the five scores: a
run of identical pairs (a bot that wins every game) would otherwise measure no
variance at all, and the ratio would be undefined.

Pure and stdlib-only, in the rules package so that both sides use one copy: the
SDK's arena (``client_sdk.arena.run_sprt``) and the server's scrimmages
(``server.ladder.scrimmage``) play the pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

#: A pair's possible scores for B, in half games: 0 to 4 halves (0 to 2 games).
PAIR_SCORES = 5

Decision = Literal["better", "not better"]


def expected_score(elo: float) -> float:
    """Returns the score (0 to 1) per game that ``elo`` logistic Elo points mean."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def elo(score: float) -> float:
    """Returns the logistic Elo difference that a score per game means (±inf at 1, 0)."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


@dataclass(frozen=True, slots=True)
class Sprt:
    """The hypotheses and error rates of a test (logistic Elo; B against A).

    Raises ValueError when ``elo1`` is not above ``elo0`` or an error rate is not
    strictly between 0 and 1/2.
    """

    elo0: float = 0.0
    elo1: float = 50.0
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not self.elo1 > self.elo0:
            raise ValueError(f"elo1 {self.elo1:g} must be above elo0 {self.elo0:g}")
        for label, rate in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0.0 < rate < 0.5:
                raise ValueError(f"{label} {rate:g}: an error rate is above 0 and below 0.5")

    @property
    def bounds(self) -> tuple[float, float]:
        """Returns ``(lower, upper)``: the LLR below which B is not better, and above
        which it is."""
        return (
            math.log(self.beta / (1.0 - self.alpha)),
            math.log((1.0 - self.beta) / self.alpha),
        )

    def llr(self, pairs: Sequence[int]) -> float:
        """Returns the log-likelihood ratio of ``elo1`` against ``elo0`` for the
        pentanomial ``pairs`` (counts of pairs that scored 0 to 4 halves for B).

        0 before any pair. Raises ValueError for a count list of the wrong length or
        a negative count.
        """
        n, mean, variance = _moments(pairs)
        if n == 0:
            return 0.0
        s0, s1 = expected_score(self.elo0), expected_score(self.elo1)
        return n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * variance)

    def decide(self, llr: float) -> Decision | None:
        """Returns the decision an LLR gives, or None while it is inside the bounds."""
        lower, upper = self.bounds
        if llr >= upper:
            return "better"
        if llr <= lower:
            return "not better"
        return None

    def fixed_count(self, variance: float) -> int:
        """Returns how many independent samples (deal pairs, or single games) a test
        of a fixed size needs for the same error rates, given the variance of a
        sample's score per game (0 to 1): the smallest N at which a one-sided z test
        at ``alpha`` has power ``1 - beta`` at ``elo1``,
        ``N = ((z_alpha + z_beta) sqrt(v) / (s1 - s0))^2``."""
        from statistics import NormalDist

        z = NormalDist().inv_cdf
        spread = expected_score(self.elo1) - expected_score(self.elo0)
        need = ((z(1 - self.alpha) + z(1 - self.beta)) * math.sqrt(variance) / spread) ** 2
        return max(1, math.ceil(need))


#: The pseudo-count added to each pair score when the variance is measured.
PRIOR = 0.5


def _moments(pairs: Sequence[int]) -> tuple[int, float, float]:
    """Returns (pairs, mean, variance) of the per-game pair score (halves / 4); the
    variance with :data:`PRIOR` added to every count (see the module)."""
    if len(pairs) != PAIR_SCORES:
        raise ValueError(f"a pentanomial has {PAIR_SCORES} counts, got {len(pairs)}")
    if any(c < 0 for c in pairs):
        raise ValueError(f"pentanomial counts cannot be negative: {list(pairs)}")
    n = sum(pairs)
    if n == 0:
        return 0, 0.0, 0.0
    mean = sum(c * k / 4 for k, c in enumerate(pairs)) / n
    padded = [c + PRIOR for c in pairs]
    total = sum(padded)
    centre = sum(c * k / 4 for k, c in enumerate(padded)) / total
    variance = sum(c * (k / 4 - centre) ** 2 for k, c in enumerate(padded)) / total
    return n, mean, variance


def variance(pairs: Sequence[int]) -> float:
    """Returns the pair score's variance (per game, 0 to 1) as the test measures it.
    Raises ValueError as :meth:`Sprt.llr`."""
    return _moments(pairs)[2]


def game_variance(trinomial: Sequence[int]) -> float:
    """Returns the variance of a single game's score (0, 1/2 or 1) from the counts of
    B's ``(losses, ties, wins)``; 1/4 (the most) before any game."""
    n = sum(trinomial)
    if n == 0:
        return 0.25
    mean = (trinomial[1] / 2 + trinomial[2]) / n
    return sum(c * (x - mean) ** 2 for c, x in zip(trinomial, (0.0, 0.5, 1.0), strict=True)) / n


def pair_halves(first: tuple[int, int], second: tuple[int, int]) -> int:
    """Returns B's pair score in halves (0 to 4) from its two games' ranks: each game
    ``(rank of A, rank of B)`` (1 best); a win is 2 halves, a tie 1, a loss 0."""

    def halves(ranks: tuple[int, int]) -> int:
        a, b = ranks
        return 2 if b < a else 1 if b == a else 0

    return halves(first) + halves(second)
