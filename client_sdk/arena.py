"""The local arena: many games between bots, in parallel processes, with statistics.

Seats are rotated so that no bot gains from where it sits: games come in blocks
of ``players`` games that rotate one arrangement of the bots through every seat,
and successive blocks walk through the distinct arrangements. With fewer bots
than seats, seats are filled by cycling the bots; with more, each block samples
which bots play. Everything derives from ``seed``, so a run repeats exactly.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import random
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Future,
    ProcessPoolExecutor,
    as_completed,
    wait,
)
from dataclasses import asdict, dataclass
from typing import Any

from mammamia import IllegalActionError

from .bot import Bot
from .loader import load_bot
from .local import play_local

Z95 = 1.959963984540054
"""The two-sided 95% quantile of the standard normal distribution."""


@dataclass(frozen=True)
class BotStats:
    """One bot's results over an arena run; ``wins`` counts a shared win as a fraction."""

    name: str
    games: int
    wins: float
    win_rate: float
    ci95: tuple[float, float]
    mean_delivered: float
    replaced: int
    """Decisions the bot got wrong (raised or illegal) that were answered for it."""


@dataclass(frozen=True)
class ArenaResult:
    """The statistics of an arena run, best win rate first."""

    games: int
    players: int
    seed: int
    bots: tuple[BotStats, ...]

    def to_json(self) -> dict[str, Any]:
        """Returns ``{"bots": [{"name", "games", "wins", "win_rate", "ci95", ...}]}``."""
        return {"games": self.games, "players": self.players, "seed": self.seed,
                "bots": [{**asdict(b), "ci95": list(b.ci95)} for b in self.bots]}

    def table(self) -> str:
        """Returns the statistics as an aligned text table."""
        rows = [("bot", "games", "wins", "win rate", "95% CI", "mean delivered")]
        for b in self.bots:
            rows.append((b.name, str(b.games), f"{b.wins:g}", f"{b.win_rate:.3f}",
                         f"[{b.ci95[0]:.3f}, {b.ci95[1]:.3f}]", f"{b.mean_delivered:.2f}"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = []
        for r in rows:
            cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:],
                                                                          strict=True)]
            lines.append("  ".join(cells))
        return "\n".join(lines)


def wilson_interval(successes: float, trials: int, z: float = Z95) -> tuple[float, float]:
    """Returns the Wilson score interval for a proportion ((0, 1) when ``trials`` is 0)."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    # At 0 or all successes the bound is exact; rounding must not move it off 0 or 1.
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= trials else min(1.0, centre + half)
    return (low, high)


def lineups(bots: int, players: int, games: int, seed: int = 0) -> Iterator[tuple[int, ...]]:
    """Yields, per game, the index of the bot in each seat (see the module docstring)."""
    if bots <= players:
        base = [i % bots for i in range(players)]
        arrangements = sorted({(base[0], *rest) for rest in itertools.permutations(base[1:])})
        for g in range(games):
            arrangement = arrangements[(g // players) % len(arrangements)]
            turn = g % players
            yield arrangement[turn:] + arrangement[:turn]
        return
    for g in range(games):
        if g % players == 0:
            arrangement = tuple(random.Random(f"{seed}/lineup/{g // players}")
                                .sample(range(bots), players))
        turn = g % players
        yield arrangement[turn:] + arrangement[:turn]


def game_seed(seed: int, game: int) -> int:
    """Returns the seed of game number ``game`` of a run seeded ``seed``."""
    return random.Random(f"{seed}/game/{game}").getrandbits(63)


@dataclass(frozen=True)
class _Game:
    lineup: tuple[int, ...]
    delivered: tuple[int, ...]
    winners: tuple[int, ...]
    replaced: tuple[int, ...]


@functools.cache
def _bot_class(spec: str) -> Callable[[], Bot]:
    return load_bot(spec)


def _play(specs: tuple[str, ...], lineup: tuple[int, ...], seed: int) -> _Game:
    """Returns the outcome of one arena game (runs in a worker process)."""
    bots = [_bot_class(specs[i])() for i in lineup]
    result = play_local(bots, seed=seed)
    return _Game(lineup, result.delivered, result.winners, result.replaced)


def _worker_start(configure: Callable[[], None] | None) -> None:
    # Ctrl-C is the parent's to handle: it stops handing out games and cancels the rest.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if configure is not None:
        configure()


def run_arena(specs: Sequence[str], games: int, players: int | None = None,
              jobs: int | None = None, seed: int = 0, progress: bool = False,
              configure: Callable[[], None] | None = None) -> ArenaResult:
    """Returns the statistics of ``games`` local games between the bots of ``specs``.

    ``players`` defaults to the number of specs (at least 2, at most 5); ``jobs``
    worker processes (default: the CPU count; 1 plays in this process). A progress
    bar goes to stderr when ``progress``. ``configure`` runs in each worker first
    (to set up logging). Raises BotSpecError for a bad SPEC, IllegalActionError for
    a bad player count (R-SETUP-1), ValueError for a bad ``games``/``jobs``.
    """
    if not specs:
        raise ValueError("the arena needs at least one bot SPEC")
    players = players if players is not None else min(max(len(specs), 2), 5)
    if not 2 <= players <= 5:
        raise IllegalActionError(f"players must be 2 to 5, got {players!r}", "R-SETUP-1")
    if games < 1:
        raise ValueError(f"games must be 1 or more, got {games!r}")
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    if jobs < 1:
        raise ValueError(f"jobs must be 1 or more, got {jobs!r}")
    specs = tuple(specs)
    names = _names([_bot_class(s) for s in specs])
    plan = ((lineup, game_seed(seed, g)) for g, lineup in
            enumerate(lineups(len(specs), players, games, seed)))

    from tqdm import tqdm

    bar = tqdm(total=games, desc="arena", unit="game", file=sys.stderr, disable=not progress)
    outcomes: list[_Game] = []
    try:
        if jobs == 1:
            for lineup, s in plan:
                outcomes.append(_play(specs, lineup, s))
                bar.update()
        else:
            with ProcessPoolExecutor(max_workers=min(jobs, games), initializer=_worker_start,
                                     initargs=(configure,)) as pool:
                try:
                    _run_pool(pool, specs, plan, jobs, outcomes, bar.update)
                except BaseException:
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
    finally:
        bar.close()
    return ArenaResult(games=games, players=players, seed=seed,
                       bots=_stats(names, outcomes))


def _run_pool(pool: ProcessPoolExecutor, specs: tuple[str, ...],
              plan: Iterator[tuple[tuple[int, ...], int]], jobs: int, outcomes: list[_Game],
              done: Callable[[], object]) -> None:
    """Plays the planned games in ``pool``, a few per worker in flight at a time (so a
    long run neither queues every game up front nor waits long on Ctrl-C)."""
    pending: set[Future[_Game]] = set()
    for lineup, seed in plan:
        if len(pending) >= 4 * jobs:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                outcomes.append(future.result())
                done()
        pending.add(pool.submit(_play, specs, lineup, seed))
    for future in as_completed(pending):
        outcomes.append(future.result())
        done()


def _names(classes: Sequence[Callable[[], Bot]]) -> list[str]:
    """Returns a distinct display name per spec (``name``, then ``name#2``, ...)."""
    out: list[str] = []
    for cls in classes:
        base = str(getattr(cls, "name", None) or getattr(cls, "__name__", "bot"))
        name, n = base, 1
        while name in out:
            n += 1
            name = f"{base}#{n}"
        out.append(name)
    return out


def _stats(names: Sequence[str], outcomes: Sequence[_Game]) -> tuple[BotStats, ...]:
    games = [0] * len(names)
    # Shared wins are counted in sixtieths (1..5 winners all divide 60), so the sums
    # are exact whatever order the games finished in.
    sixtieths = [0] * len(names)
    delivered = [0] * len(names)
    replaced = [0] * len(names)
    for game in outcomes:
        for seat, bot in enumerate(game.lineup):
            games[bot] += 1
            delivered[bot] += game.delivered[seat]
            replaced[bot] += game.replaced[seat]
            if seat in game.winners:
                sixtieths[bot] += 60 // len(game.winners)
    stats = []
    for i, name in enumerate(names):
        wins = sixtieths[i] / 60
        stats.append(BotStats(name=name, games=games[i], wins=wins,
                              win_rate=wins / games[i] if games[i] else 0.0,
                              ci95=wilson_interval(wins, games[i]),
                              mean_delivered=delivered[i] / games[i] if games[i] else 0.0,
                              replaced=replaced[i]))
    return tuple(sorted(stats, key=lambda b: (-b.win_rate, b.name)))
