"""A clock the test moves by hand, for the server's injected clock (server.clock)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

START = 1_800_000_000.0
"""Where a manual clock starts: a fixed UNIX time, so timestamps repeat run to run."""


class ManualTimer:
    """A callback waiting for the manual clock to reach its time."""

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        # As asyncio's handles do, let go of the callback (and what it holds).
        self.cancelled = True
        self.callback = _nothing


def _nothing() -> None:
    pass


class ManualClock:
    """Time stands still until ``advance`` moves it; timers run as their time comes."""

    def __init__(self, start: float = START) -> None:
        self.time = start
        self._timers: list[tuple[float, int, ManualTimer]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self.time

    def call_at(self, when: float, callback: Callable[[], None]) -> ManualTimer:
        timer = ManualTimer(when, callback)
        heapq.heappush(self._timers, (when, next(self._order), timer))
        return timer

    def pending(self) -> int:
        """Returns how many timers wait for their time (cancelled ones included)."""
        return len(self._timers)

    def advance(self, seconds: float) -> None:
        """Moves the time on by ``seconds``, running every timer due on the way, in
        time order (each at its own time)."""
        target = self.time + seconds
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                self.time = max(self.time, when)
                timer.callback()
        self.time = target
