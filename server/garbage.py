"""The garbage collector's settings for a serving process, set once at start-up.

A server's heap is large and long-lived: every running match's state and log, the
ended matches kept for late readers (``server.runners``), the encoders' caches
(``server.wire``). With CPython's default thresholds, (700, 10, 10), the collector
ran about 50 times a second under a load of 250 four-player matches
(``bench.load``), and each full collection went through some 450,000 objects:
about a fifth of the server's CPU time went to the collector, in pauses of up to
a quarter of a second, each one a late decision for every match in play.

Almost everything a server frees goes by reference counting, as it is dropped, so
running the collector less often costs little memory: what waits longer is only
garbage in reference cycles. And what start-up made (modules, classes, the
handlers) lives as long as the process, so it is moved out of the collector's
sight once, instead of being gone through again at every full collection.
"""

from __future__ import annotations

import gc
from typing import Final

THRESHOLDS: Final = (60_000, 10, 10)
"""Allocations (less deallocations) before the youngest generation is collected, and
collections of each generation before the next one's. Under the load of 250
four-player matches, 60,000 took the collector 3.7 to 4.1% of the server's time in
four runs, against 6.6 to 7.0% in three with 20,000 (whose middle collections
paused up to 200 to 230 ms; 40,000: up to 400 ms), and 100,000 saved little more
(3.6%) for young collections twice as long (up to 156 ms)."""


def settle() -> None:
    """Collects start-up's garbage, freezes what is left (it lives as long as the
    process) and sets the collector's thresholds for serving."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
