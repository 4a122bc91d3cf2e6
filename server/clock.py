"""Time, as the server's matches see it: one injected clock.

The match itself never reads a clock: its caller passes the time in. The parts
that wait (a match's deadlines, the start timeout, the streams' short hold) ask a
``Clock`` to call them back at a given time. ``SystemClock`` is the real one,
on the running event loop; tests drive a manual clock of their own through the
same two methods, so nothing depends on the machine's speed.

Times are UNIX seconds (floats), the time base of the contract's timestamps.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    """A callback scheduled by a clock."""

    def cancel(self) -> None:
        """Stops the callback from running (nothing once it has run)."""


class Clock(Protocol):
    """The time now, and callbacks at a later time."""

    def now(self) -> float:
        """Returns the time now, in UNIX seconds."""

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        """Returns a timer that runs ``callback`` on the event loop at ``when`` (or at
        once when ``when`` has passed)."""


class SystemClock:
    """The wall clock, with callbacks on the running event loop."""

    def now(self) -> float:
        """Returns ``time.time()``."""
        return time.time()

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        """Returns the loop's handle of ``callback`` scheduled ``when - now`` from now."""
        return asyncio.get_running_loop().call_later(max(0.0, when - time.time()), callback)
