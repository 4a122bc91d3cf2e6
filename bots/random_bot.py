"""The ``random`` bot: every decision uniform among the legal options.

The floor every other bot should beat. Its choices come from ``self.rng``, which
local games and the arena seed, so its games replay exactly.
"""

from __future__ import annotations

from client_sdk import Bot, Resolve, Turn, View


class RandomBot(Bot):
    """Chooses uniformly among ``view.legal``, for turns and resolutions alike."""

    name = "random"

    def turn(self, view: View) -> Turn:
        """Returns a legal turn chosen uniformly."""
        action = self.rng.choice(view.legal)
        assert isinstance(action, Turn)
        return action

    def resolve(self, view: View) -> Resolve:
        """Returns a legal resolution chosen uniformly (declining included)."""
        action = self.rng.choice(view.legal)
        assert isinstance(action, Resolve)
        return action
