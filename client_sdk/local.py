"""Local play: bots play a whole game in-process against the rules engine, no network.

>>> from client_sdk import play_local
>>> from bots.greedy import GreedyBot
>>> from bots.random_bot import RandomBot
>>> result = play_local([GreedyBot(), RandomBot(), RandomBot()], seed=7)
>>> result.winners, result.record.dumps()[:30]
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from mammamia import Action, Record, View, new_game, record_of, view_of

from .bot import Bot, Decision, Fault, FaultLog, decide, fallback
from .loader import load_bot

log = structlog.get_logger()

BotLike = Bot | Callable[[], Bot] | str
"""A bot instance, a class (or factory) that makes one per seat, or a SPEC as the
command line takes it (``"counter"``, ``"search@budget_ms=50"``, ``"my_bot.py:MyBot"``)."""


@dataclass(frozen=True)
class LocalResult:
    """The outcome of a local game, seat by seat (R-END-2), with its game record."""

    record: Record
    names: tuple[str, ...]
    delivered: tuple[int, ...]
    ranks: tuple[int, ...]
    winners: tuple[int, ...]
    replaced: tuple[int, ...]
    """How many decisions of each seat were replaced by the safe fallback (faults and
    late answers alike)."""
    late: tuple[int, ...] = ()
    """Of those, how many per seat were past the deadline (or came while a late call
    of the same bot still ran)."""
    faults: tuple[Fault, ...] = ()
    """Each distinct fault of the game (a raise or a wrong answer), first seen first."""


class _Caller:
    """Calls one seat's bot as a server would: on a thread, against the deadline.

    A call that runs past the deadline cannot be stopped; its answer is dropped, and
    until it returns every decision of the seat is answered with the safe option
    without calling the bot (so a bot is never called twice at once). A call that
    returns, but later than the deadline by ``clock``, is late too.
    """

    def __init__(
        self, bot: Bot, deadline_s: float, clock: Callable[[], float], faults: FaultLog
    ) -> None:
        self.bot, self.deadline_s, self.clock, self.faults = bot, deadline_s, clock, faults
        self.running: threading.Event | None = None  # set when the late call returns

    def busy(self) -> bool:
        """Returns whether a call past its deadline still runs."""
        return self.running is not None and not self.running.is_set()

    def call(self, view: View, decision: str) -> tuple[Decision, bool]:
        """Returns the decision taken for the seat and whether it was late."""
        if self.busy():
            return Decision(fallback(view), "still deciding an earlier decision"), True
        answer: list[Decision] = []
        returned = threading.Event()

        def run() -> None:
            try:
                answer.append(decide(self.bot, view, decision, self.faults))
            finally:
                returned.set()

        started = self.clock()
        threading.Thread(target=run, name=f"bot-{self.bot.name}", daemon=True).start()
        if not returned.wait(self.deadline_s):
            self.running = returned
            log.debug("bot_late", bot=self.bot.name, decision=decision)
            return Decision(fallback(view), f"no answer within {self.deadline_s:g} s"), True
        taken = self.clock() - started
        try:
            self.bot.on_answered(taken)
        except Exception as e:
            log.warning(
                "bot_hook_failed",
                bot=self.bot.name,
                hook="on_answered",
                fault=f"{type(e).__name__}: {e}",
            )
        if taken > self.deadline_s:
            return Decision(fallback(view), f"answered after {self.deadline_s:g} s"), True
        return answer[0], False


def seat_bots(bots: Sequence[BotLike], players: int) -> list[Bot]:
    """Returns one bot per seat, cycling ``bots`` when there are fewer than ``players``
    (a SPEC is loaded with ``load_bot``, parameters and all); raises ValueError when one
    bot instance would sit in two seats, BotSpecError for a bad SPEC."""
    if not bots:
        raise ValueError("play_local needs at least one bot")
    seated: list[Bot] = []
    loaded: dict[str, Callable[[], Bot]] = {}
    for seat in range(players):
        item = bots[seat % len(bots)]
        if isinstance(item, str):
            if item not in loaded:
                loaded[item] = load_bot(item)
            item = loaded[item]
        bot = item if isinstance(item, Bot) else item()
        if not isinstance(bot, Bot):
            raise ValueError(f"seat {seat}: {item!r} is not a Bot nor makes one")
        if any(bot is other for other in seated):
            raise ValueError(
                f"seat {seat}: the same {bot.name!r} instance already sits at "
                f"seat {seated.index(bot)}; pass its class to seat a fresh one"
            )
        seated.append(bot)
    return seated


def play_local(
    bots: Sequence[BotLike],
    seed: int = 0,
    players: int | None = None,
    colours: Sequence[str] | None = None,
    first_player: int | None = None,
    deadline_ms: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    faults: FaultLog | None = None,
) -> LocalResult:
    """Returns the result of one game between ``bots`` (seat order), played in-process.

    ``players`` defaults to the number of bots; with fewer bots, seats cycle through
    them (pass classes, or SPECs such as ``"search@budget_ms=50"``, to get one
    instance per seat). Every bot's ``rng`` is seeded
    from ``seed`` and its seat, so the same call plays the same game. A bot that
    raises or answers illegally is answered for (see ``decide``); each distinct
    fault is logged once to ``faults`` (default: a log of this game's own).

    With ``deadline_ms`` (the server's default is 5000), decisions keep the server's
    clock: each call runs on a thread, and one that takes longer than the deadline
    (measured by ``clock``, seconds) is answered with the safe option and counted as
    late; the bot is not called again until the late call returns. Without it, the
    bot is called directly and may take its time.
    Raises IllegalActionError for a bad setup (R-SETUP-1).
    """
    players = len(bots) if players is None else players
    state = new_game(players, seed, colours, first_player)
    seated = seat_bots(bots, players)
    names = tuple(bot.name for bot in seated)
    for seat, bot in enumerate(seated):
        bot.rng = random.Random(f"{seed}/{seat}")
        _hook(bot, "on_game_start", view_of(state, seat))
    faults = faults if faults is not None else FaultLog()
    callers = (
        None
        if deadline_ms is None
        else [_Caller(bot, deadline_ms / 1000, clock, faults) for bot in seated]
    )
    actions: list[tuple[int, Action]] = []
    replaced = [0] * players
    late = [0] * players
    seen: dict[str, Fault] = {}
    while not state.is_over:
        to_act = state.to_act
        assert to_act is not None
        view = view_of(state, to_act)
        decision = f"local-{len(actions) + 1}"
        if callers is None:
            answer = decide(seated[to_act], view, decision, faults)
        else:
            answer, was_late = callers[to_act].call(view, decision)
            late[to_act] += was_late
        if answer.fault is not None:
            replaced[to_act] += 1
        if answer.report is not None:
            seen.setdefault(answer.report.key, answer.report)
        state.apply(answer.action)
        actions.append((to_act, answer.action))
    for seat, bot in enumerate(seated):
        if callers is not None and callers[seat].busy():
            log.warning(
                "bot_hook_skipped",
                bot=bot.name,
                hook="on_game_end",
                fault="the bot is still deciding a decision past its deadline",
            )
            continue
        _hook(bot, "on_game_end", view_of(state, seat))
    # The final state knows the deal and every reshuffle, so the record replays exactly.
    record = record_of(state, actions, seed=seed, meta={"names": list(names)})
    return LocalResult(
        record=record,
        names=names,
        delivered=tuple(len(d) for d in state.delivered),
        ranks=tuple(state.ranking()),
        winners=tuple(state.winners()),
        replaced=tuple(replaced),
        late=tuple(late),
        faults=tuple(seen.values()),
    )


def _hook(bot: Bot, hook: str, view: View) -> None:
    """Calls a bot's optional hook; a hook that raises is logged, never fatal."""
    try:
        getattr(bot, hook)(view)
    except Exception as e:
        log.warning(
            "bot_hook_failed",
            bot=bot.name,
            hook=hook,
            seat=view.seat,
            fault=f"{type(e).__name__}: {e}",
        )
