"""The Mamma Mia! bot SDK: write a bot as one class, test it locally, play it anywhere.

    from client_sdk import Bot, Turn, View

    class MyBot(Bot):
        name = "mine"

        def turn(self, view: View) -> Turn:
            return view.legal[0]

- ``Bot``: subclass it; ``turn`` is required, ``resolve`` has a sensible default.
- ``play_local(bots, seed=..., deadline_ms=5000)``: a game in-process, with its game
  record, optionally on the server's clock.
- ``run_arena(specs, games=...)``: many local games in parallel, with statistics
  (on the server's clock: late answers are replaced and counted).
- ``run_bot(bot, server, token)``: play one seat of a match on a server.
- ``run_ladder(factory, server, name, key)``: play ladder match after match.
- ``run_place(factory, server, placed=...)``: play every match an organiser seats the
  bot in (docs/protocol.md, "Places"); ``placed`` is given the place's token.

The views and actions are those of the rules package (``mammamia``); they are
re-exported here so a bot needs only this import.
"""

from mammamia import (
    COLOURS,
    INGREDIENTS,
    ORDERS,
    SUPPLY,
    WAITER,
    Event,
    IllegalActionError,
    Resolve,
    SeatInfo,
    Turn,
    View,
)

from .arena import ArenaResult, BotStats, run_arena, wilson_interval
from .bot import Bot, Decision, Fault, FaultLog, decide, fallback, fewest_cards_bake
from .connection import (
    ConnectionLost,
    MatchResult,
    SeatRefused,
    run_bot,
    run_ladder,
    run_place,
)
from .loader import BotSpecError, load_bot
from .local import LocalResult, play_local

__all__ = [
    "COLOURS",
    "INGREDIENTS",
    "ORDERS",
    "SUPPLY",
    "WAITER",
    "ArenaResult",
    "Bot",
    "BotSpecError",
    "BotStats",
    "ConnectionLost",
    "Decision",
    "Event",
    "Fault",
    "FaultLog",
    "IllegalActionError",
    "LocalResult",
    "MatchResult",
    "Resolve",
    "SeatInfo",
    "SeatRefused",
    "Turn",
    "View",
    "decide",
    "fallback",
    "fewest_cards_bake",
    "load_bot",
    "play_local",
    "run_arena",
    "run_bot",
    "run_ladder",
    "run_place",
    "wilson_interval",
]
