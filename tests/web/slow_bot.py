"""A bot that takes its time (a tenth of a second a decision), so that a match
lasts long enough to be watched live; otherwise it plays like ``random``."""

from __future__ import annotations

import time

from client_sdk import Bot, Resolve, Turn, View

THINK_SECONDS = 0.1


class SlowBot(Bot):
    """Waits THINK_SECONDS, then chooses uniformly among the legal options."""

    name = "slow"

    def turn(self, view: View) -> Turn:
        """Returns a legal turn chosen uniformly, after a pause."""
        time.sleep(THINK_SECONDS)
        action = self.rng.choice(view.legal)
        assert isinstance(action, Turn)
        return action

    def resolve(self, view: View) -> Resolve:
        """Returns a legal resolution chosen uniformly, after a pause."""
        time.sleep(THINK_SECONDS)
        action = self.rng.choice(view.legal)
        assert isinstance(action, Resolve)
        return action
