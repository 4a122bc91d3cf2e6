"""Local play: bots play a whole game in-process against the rules engine, no network.

    >>> from client_sdk import play_local
    >>> from bots.greedy import GreedyBot
    >>> from bots.random_bot import RandomBot
    >>> result = play_local([GreedyBot(), RandomBot(), RandomBot()], seed=7)
    >>> result.winners, result.record.dumps()[:30]
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from mammamia import Action, Record, View, new_game, record_of, view_of

from .bot import Bot, decide

log = structlog.get_logger()

BotLike = Bot | Callable[[], Bot]
"""A bot instance, or a class (or factory) that makes one per seat."""


@dataclass(frozen=True)
class LocalResult:
    """The outcome of a local game, seat by seat (R-END-2), with its game record."""

    record: Record
    names: tuple[str, ...]
    delivered: tuple[int, ...]
    ranks: tuple[int, ...]
    winners: tuple[int, ...]
    replaced: tuple[int, ...]
    """How many decisions of each seat were replaced by the safe fallback."""


def seat_bots(bots: Sequence[BotLike], players: int) -> list[Bot]:
    """Returns one bot per seat, cycling ``bots`` when there are fewer than ``players``;
    raises ValueError when one bot instance would sit in two seats."""
    if not bots:
        raise ValueError("play_local needs at least one bot")
    seated: list[Bot] = []
    for seat in range(players):
        item = bots[seat % len(bots)]
        bot = item if isinstance(item, Bot) else item()
        if not isinstance(bot, Bot):
            raise ValueError(f"seat {seat}: {item!r} is not a Bot nor makes one")
        if any(bot is other for other in seated):
            raise ValueError(f"seat {seat}: the same {bot.name!r} instance already sits at "
                             f"seat {seated.index(bot)}; pass its class to seat a fresh one")
        seated.append(bot)
    return seated


def play_local(bots: Sequence[BotLike], seed: int = 0, players: int | None = None,
               colours: Sequence[str] | None = None,
               first_player: int | None = None) -> LocalResult:
    """Returns the result of one game between ``bots`` (seat order), played in-process.

    ``players`` defaults to the number of bots; with fewer bots, seats cycle through
    them (pass classes to get one instance per seat). Every bot's ``rng`` is seeded
    from ``seed`` and its seat, so the same call plays the same game. A bot that
    raises or answers illegally is logged and answered for (see ``decide``).
    Raises IllegalActionError for a bad setup (R-SETUP-1).
    """
    players = len(bots) if players is None else players
    state = new_game(players, seed, colours, first_player)
    seated = seat_bots(bots, players)
    names = tuple(bot.name for bot in seated)
    for seat, bot in enumerate(seated):
        bot.rng = random.Random(f"{seed}/{seat}")
        _hook(bot, "on_game_start", view_of(state, seat))
    actions: list[tuple[int, Action]] = []
    replaced = [0] * players
    while not state.is_over:
        to_act = state.to_act
        assert to_act is not None
        view = view_of(state, to_act)
        answer = decide(seated[to_act], view, f"local-{len(actions) + 1}")
        if answer.fault is not None:
            replaced[to_act] += 1
        state.apply(answer.action)
        actions.append((to_act, answer.action))
    for seat, bot in enumerate(seated):
        _hook(bot, "on_game_end", view_of(state, seat))
    # The final state knows the deal and every reshuffle, so the record replays exactly.
    record = record_of(state, actions, seed=seed, meta={"names": list(names)})
    return LocalResult(record=record, names=names,
                       delivered=tuple(len(d) for d in state.delivered),
                       ranks=tuple(state.ranking()), winners=tuple(state.winners()),
                       replaced=tuple(replaced))


def _hook(bot: Bot, hook: str, view: View) -> None:
    """Calls a bot's optional hook; a hook that raises is logged, never fatal."""
    try:
        getattr(bot, hook)(view)
    except Exception as e:
        log.warning("bot_hook_failed", bot=bot.name, hook=hook, seat=view.seat,
                    fault=f"{type(e).__name__}: {e}")
