"""Leagues with boss bots: an optional ladder mode (``mammamia serve --leagues``).

The leagues are named and ordered, lowest first; each has a **boss**, a built-in
bot that the server itself plays as a ladder bot named ``<league>-boss``. A bot
starts in the lowest league and is seated only with the bots of its league, its
boss included (``server.ladder.scheduler.form_matches``); after each rated match, a
bot whose rating's lower bound (``mu - sigmas * sigma``) passes its boss's moves up
one league. The move is decided where the match is rated
(``server.db.ladder.leagues.promote``) and stamped there: when, from, to and why.
The last league may have no boss: a bot there has nothing left to pass.

This module reads the flag (:func:`parse_leagues`), finds the built-in bots by
name in the ``mammamia.bosses`` entry points (the server never imports the bots:
pyproject.toml names them), and plays the bosses' seats (:class:`Bosses`): each
boss seat follows its own stream, as any seat's is filtered, and answers from its
own view, the bot thinking on a worker thread so that the event loop never waits
for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
from collections.abc import Callable, Collection, Sequence
from importlib.metadata import entry_points
from typing import Any, Final, Protocol

import structlog

from mammamia import TURN, Action, View, view_of

from .. import visibility
from ..db.ladder.leagues import League
from ..events import Decision
from ..quoting import quoted
from ..runner import Runner
from ..runners import Runners
from ..streams import Batch, Follower

log = structlog.get_logger()

GROUP: Final = "mammamia.bosses"
"""The entry points that name the built-in bots a boss may be."""

#: A league's name: what a bot's name may hold, short enough for ``-boss`` after it.
LEAGUE_NAME: Final = re.compile(r"[A-Za-z0-9._-]{1,27}")

#: The width of the lower bounds compared, by default: the standings' interval.
DEFAULT_SIGMAS: Final = 2.0


class Boss(Protocol):
    """What a boss's bot answers (the SDK's ``Bot`` does)."""

    rng: random.Random

    def turn(self, view: View) -> Action:
        """Returns the turn to take (one of ``view.legal``)."""
        ...

    def resolve(self, view: View) -> Action:
        """Returns how to resolve the seat's revealed order (one of ``view.legal``)."""
        ...


def built_in() -> dict[str, Callable[..., Boss]]:
    """Returns the built-in bots a boss may be, by name (``mammamia.bosses``); one that
    does not load is left out (a league naming it is then refused)."""
    found: dict[str, Callable[..., Boss]] = {}
    for ep in entry_points(group=GROUP):
        with contextlib.suppress(Exception):  # a broken plug-in must not stop the server
            found[ep.name] = ep.load()
    return found


def boss_name(league: str) -> str:
    """Returns the ladder name of ``league``'s boss."""
    return f"{league}-boss"


def _value(text: str) -> Any:
    for kind in (int, float):
        with contextlib.suppress(ValueError):
            return kind(text)
    return text


def boss_factory(spec: str, known: dict[str, Callable[..., Boss]]) -> Callable[[], Boss]:
    """Returns what makes the boss ``spec`` names: a built-in bot, optionally with
    ``@key=value[,key=value]`` (``search@budget_ms=20``). Raises ValueError naming what
    is wrong (an unknown bot, a bad parameter)."""
    base, at, params = spec.partition("@")
    cls = known.get(base)
    if cls is None:
        raise ValueError(
            f"no built-in bot {quoted(base)}: one of {', '.join(sorted(known))}"
            if known
            else f"no built-in bot {quoted(base)}: none is installed "
            f"(the {GROUP} entry points: install the package again)"
        )
    kwargs: dict[str, Any] = {}
    for pair in params.split(",") if at else ():
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise ValueError(f"boss {quoted(spec)}: expected key=value after @, got {quoted(pair)}")
        kwargs[key] = _value(value)

    def make() -> Boss:
        return cls(**kwargs)

    try:
        make()
    except (TypeError, ValueError) as e:
        raise ValueError(f"boss {quoted(spec)}: {e}") from None
    return make


def parse_leagues(
    text: str, sigmas: float = DEFAULT_SIGMAS, known: dict[str, Callable[..., Boss]] | None = None
) -> list[League]:
    """Returns the leagues ``text`` names, lowest first: ``NAME=BOSS`` words separated
    by spaces (``wood=random bronze=greedy silver=search@budget_ms=20``), the last of
    which may be a bare ``NAME`` (a top league without a boss); empty text: leagues
    off. Raises ValueError naming what is wrong."""
    words = text.split()
    if len(words) == 1:
        raise ValueError("name at least two leagues (a bot starts in the first)")
    known = built_in() if known is None and words else (known or {})
    out: list[League] = []
    for i, word in enumerate(words):
        name, eq, spec = word.partition("=")
        if not LEAGUE_NAME.fullmatch(name):
            raise ValueError(f"league {quoted(name)}: 1 to 27 letters, digits, '-', '_' or '.'")
        if name in (league.name for league in out):
            raise ValueError(f"league {quoted(name)} is named twice")
        if not eq:
            if i + 1 < len(words):
                raise ValueError(
                    f"league {quoted(name)} needs a boss (NAME=BOT): only the last may have none"
                )
            out.append(League(name, None, None, sigmas))
            continue
        boss_factory(spec, known)  # raises for a bot that cannot be made
        out.append(League(name, boss_name(name), spec, sigmas))
    return out


class Bosses:
    """Plays the bosses' seats in the ladder matches this host runs."""

    def __init__(self, leagues: Sequence[League], runners: Runners) -> None:
        known = built_in()
        self.runners = runners
        self.makers = {
            league.boss: boss_factory(league.spec, known)
            for league in leagues
            if league.boss is not None and league.spec is not None
        }
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def names(self) -> Collection[str]:
        """Returns the bosses' ladder names."""
        return self.makers.keys()

    def play(self, names: Sequence[str], tokens: Sequence[str]) -> None:
        """Takes the seats of the bosses among ``names`` (a match's bots in seat order,
        with its seat tokens) and plays them to the match's end; a seat of a match
        this host does not run is left alone."""
        for name, token in zip(names, tokens, strict=True):
            found = self.runners.seat_of(token) if name in self.makers else None
            if found is not None:
                self._start(name, *found)

    def resume(self, match_id: str) -> None:
        """Takes the bosses' seats of a match this host resumed from its journal (after
        a restart, or taken over from a host that went away) and plays them to its end."""
        runner = self.runners.get(match_id)
        if runner is None or runner.match.ended is not None:
            return
        for seat, name in enumerate(runner.match.names):
            if name in self.makers:
                self._start(name, runner, seat)

    def _start(self, name: str, runner: Runner, seat: int) -> None:
        runner.join(seat)
        task = asyncio.create_task(
            self._play(runner, seat, self.makers[name]()), name=f"boss-{name}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _play(self, runner: Runner, seat: int, boss: Boss) -> None:
        """Answers each decision the seat's own stream asks until the match's end."""
        boss.rng = random.Random()

        def keep(batch: Batch, now: float) -> Batch:
            return batch

        try:
            async for batch in runner.streams.stream(Follower(seat), 0, keep):
                for item in batch:
                    asked = item.decision if isinstance(item, visibility.Snapshot) else item
                    if isinstance(asked, Decision) and runner.match.decision is asked:
                        await self._answer(runner, seat, boss, asked)
        except Exception:
            # The seat is then played by the default policy, as a bot's that left.
            log.exception("boss_failed", match=runner.id, seat=seat)

    async def _answer(self, runner: Runner, seat: int, boss: Boss, asked: Decision) -> None:
        view = view_of(runner.match.state, seat)
        turn = runner.match.state.phase == TURN
        action = await asyncio.to_thread(boss.turn if turn else boss.resolve, view)
        if runner.match.decision is not asked:
            return  # its time ran out meanwhile: the default applied
        try:
            option = asked.options.index(action)
        except ValueError:
            log.warning("boss_answer_illegal", match=runner.id, seat=seat, action=str(action))
            return
        runner.answer(seat, asked.id, option, None)
