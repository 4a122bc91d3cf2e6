"""Latency figures from samples: mean and percentiles (nearest rank)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(ordered: Sequence[float], q: float) -> float:
    """Returns the ``q``-th percentile (0-100, nearest rank) of sorted samples;
    raises ValueError when there are none."""
    if not ordered:
        raise ValueError("no samples: nothing was measured")
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summary(samples: Sequence[float], scale: float = 1.0, digits: int = 1) -> dict[str, float]:
    """Returns the count, mean, p50, p90, p99 and max of ``samples``, each divided by
    ``scale`` (1000 turns nanoseconds into microseconds) and rounded to ``digits``."""
    ordered = sorted(samples)

    def fig(x: float) -> float:
        return round(x / scale, digits)

    return {
        "n": len(ordered),
        "mean": fig(sum(ordered) / len(ordered)),
        "p50": fig(percentile(ordered, 50)),
        "p90": fig(percentile(ordered, 90)),
        "p99": fig(percentile(ordered, 99)),
        "max": fig(ordered[-1]),
    }
