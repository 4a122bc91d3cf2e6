"""The ``Bot`` base class and the policy that guards every decision a bot takes.

A bot answers two kinds of decision, both with the seat's ``View`` in hand:

- ``turn(view) -> Turn``: what to play onto the oven and where to refill from;
- ``resolve(view) -> Resolve``: how to resolve one of its own orders when the
  rules give a choice (R-RES-8). The default bakes when it can.

``view.legal`` lists every legal answer in the engine's canonical order; a bot
returns one of them or builds an equal action with ``Turn.play``/``Turn.pass_turn``
or ``Resolve(...)``. ``decide`` calls the bot and, when it raises or answers
something illegal, logs one line naming the decision and answers with a safe
legal option instead: local play and the network loop share this policy.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

import structlog

from mammamia import RESOLVE, Action, Resolve, Turn, View

log = structlog.get_logger()

TURN_DECISION: Final = "turn"
RESOLVE_DECISION: Final = "resolve"


class Bot:
    """Subclass and implement ``turn``; override ``resolve`` and the hooks when useful.

    ``name`` is how the bot shows in logs, arena tables and on a server.
    ``rng`` is a random generator for the bot's own choices; local games and the
    arena seed it, so a game replays the same for the same seed.
    """

    name: str = "bot"

    @property
    def rng(self) -> random.Random:
        """Returns the bot's random generator (seeded by the game runner when it can)."""
        rng: random.Random | None = getattr(self, "_rng", None)
        if rng is None:
            rng = self._rng = random.Random()
        return rng

    @rng.setter
    def rng(self, value: random.Random) -> None:
        self._rng = value

    def turn(self, view: View) -> Turn:
        """Returns the turn to take: one of ``view.legal`` or an equal ``Turn``."""
        raise NotImplementedError(f"{type(self).__name__} must implement turn(view)")

    def resolve(self, view: View) -> Resolve:
        """Returns how to resolve ``view.deciding``, this bot's revealed order (R-RES-8).

        The default bakes with the option that spends the fewest hand cards (a pizza
        outweighs the tie-break of R-END-2) and declines when no option bakes.
        """
        return fewest_cards_bake(view)

    def on_game_start(self, view: View) -> None:
        """Called once before the bot's first decision of a game, with its first view."""

    def on_game_end(self, view: View) -> None:
        """Called once when the game is over, with the seat's final view."""


def fewest_cards_bake(view: View) -> Resolve:
    """Returns the legal bake that adds the fewest hand cards, else the decline."""
    bakes = [a for a in view.legal if isinstance(a, Resolve) and a.bake]
    if not bakes:
        return Resolve.decline()
    return min(bakes, key=lambda a: sum(a.hand) if a.hand else 0)


def fallback(view: View) -> Action:
    """Returns the safe legal answer used when a bot fails: the default bake policy
    for a resolution, the first legal option for a turn (the server's own default)."""
    if view.phase == RESOLVE:
        return fewest_cards_bake(view)
    return view.legal[0]


@dataclass(frozen=True, slots=True)
class Decision:
    """A bot's answer to one decision, and why it was replaced if it was."""

    action: Action
    fault: str | None = None


def decide(bot: Bot, view: View, decision: str = "") -> Decision:
    """Returns the bot's legal answer to ``view``, or a safe legal one with the fault.

    ``decision`` names the decision in the log line (a server's decision id, or
    a local turn number). Never raises for a faulty bot; raises ValueError only
    when ``view`` offers no legal option (nothing was asked).
    """
    if not view.legal:
        raise ValueError(f"decision {decision!r}: the view offers no legal option")
    kind = RESOLVE_DECISION if view.phase == RESOLVE else TURN_DECISION
    try:
        action = bot.resolve(view) if kind == RESOLVE_DECISION else bot.turn(view)
    except Exception as e:
        return _replace(bot, view, decision, kind, f"raised {type(e).__name__}: {e}")
    if action in view.legal:
        return Decision(action)
    expected = Resolve if kind == RESOLVE_DECISION else Turn
    if not isinstance(action, expected):
        why = f"returned {action!r}, not a {expected.__name__}"
    else:
        why = f"returned an illegal {kind}: {action}"
    return _replace(bot, view, decision, kind, why)


def _replace(bot: Bot, view: View, decision: str, kind: str, why: str) -> Decision:
    action = fallback(view)
    log.warning("bot_decision_replaced", bot=bot.name, decision=decision, kind=kind,
                seat=view.seat, round=view.round, fault=why, played=str(action))
    return Decision(action, why)
