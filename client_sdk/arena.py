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
import multiprocessing
import os
import random
import re
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import structlog

from mammamia import IllegalActionError

from .bot import Bot, Fault, FaultLog
from .loader import BotFactory, load_bot
from .local import play_local

log = structlog.get_logger()

Z95 = 1.959963984540054
"""The two-sided 95% quantile of the standard normal distribution."""

DEADLINE_MS = 5000
"""The server's default deadline per decision, which the arena keeps too."""


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
    """Decisions answered for the bot with the safe option: it raised, answered
    something illegal, or was late."""
    late: int = 0
    """Of those, the decisions past the deadline (or asked while a late call ran)."""


@dataclass(frozen=True)
class ArenaResult:
    """The statistics of an arena run, best win rate first.

    ``games`` is the number of games asked for and ``finished`` those played (fewer
    when the run was ``interrupted``). ``pairs[a][b]`` is bot ``a``'s head-to-head
    rate against ``b``: over the games both played, how often ``a`` ranked above
    ``b`` (a tie counts a half); with two players, ``a``'s win rate against ``b``.
    """

    games: int
    players: int
    seed: int
    bots: tuple[BotStats, ...]
    finished: int = -1
    interrupted: bool = False
    pairs: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Returns ``{"bots": [{"name", "games", "wins", "win_rate", "ci95", ...}]}``."""
        return {
            "games": self.games,
            "finished": self.finished,
            "interrupted": self.interrupted,
            "players": self.players,
            "seed": self.seed,
            "bots": [{**asdict(b), "ci95": list(b.ci95)} for b in self.bots],
            "pairs": self.pairs,
        }

    def table(self) -> str:
        """Returns the statistics as an aligned text table."""
        rows = [
            ("bot", "games", "wins", "win rate", "95% CI", "mean delivered", "late", "replaced")
        ]
        for b in self.bots:
            rows.append(
                (
                    b.name,
                    str(b.games),
                    f"{b.wins:g}",
                    f"{b.win_rate:.3f}",
                    f"[{b.ci95[0]:.3f}, {b.ci95[1]:.3f}]",
                    f"{b.mean_delivered:.2f}",
                    str(b.late),
                    str(b.replaced),
                )
            )
        return _aligned(rows)

    def pairs_table(self) -> str:
        """Returns the head-to-head rates: a row per bot, its rate against each column."""
        names = [b.name for b in self.bots]
        rows = [("vs", *names)]
        for a in names:
            rows.append(
                (
                    a,
                    *(
                        "-"
                        if a == b or b not in self.pairs.get(a, {})
                        else f"{self.pairs[a][b]:.3f}"
                        for b in names
                    ),
                )
            )
        return _aligned(rows)


def _aligned(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)
        ]
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
            arrangement = tuple(
                random.Random(f"{seed}/lineup/{g // players}").sample(range(bots), players)
            )
        turn = g % players
        yield arrangement[turn:] + arrangement[:turn]


def game_seed(seed: int, game: int) -> int:
    """Returns the seed of game number ``game`` of a run seeded ``seed``."""
    return random.Random(f"{seed}/game/{game}").getrandbits(63)


@dataclass(frozen=True)
class _Game:
    number: int
    lineup: tuple[int, ...]
    delivered: tuple[int, ...]
    ranks: tuple[int, ...]
    winners: tuple[int, ...]
    replaced: tuple[int, ...]
    late: tuple[int, ...]
    faults: tuple[Fault, ...]


@dataclass(frozen=True)
class _Setup:
    """What every game of a run shares (sent once to each worker)."""

    specs: tuple[str, ...]
    deadline_ms: int | None
    out: str | None
    out_lost: int | None
    width: int


@functools.cache
def _bot_class(spec: str) -> Callable[[], Bot]:
    return load_bot(spec)


_SETUP: _Setup | None = None


def record_name(game: int, width: int, names: Sequence[str]) -> str:
    """Returns the file name of game number ``game``'s record (``mammamia show`` reads it)."""
    who = "-vs-".join(re.sub(r"[^A-Za-z0-9_.-]+", "_", n) for n in names)
    return f"game-{game:0{width}d}-{who}.json"


def _play(setup: _Setup, number: int, lineup: tuple[int, ...], seed: int) -> _Game:
    """Returns the outcome of one arena game (runs in a worker process), writing its
    record when the setup asks for it."""
    bots = [_bot_class(setup.specs[i])() for i in lineup]
    result = play_local(bots, seed=seed, deadline_ms=setup.deadline_ms, faults=FaultLog(quiet=True))
    if setup.out is not None and (
        setup.out_lost is None
        or (
            setup.out_lost in lineup
            and not any(lineup[w] == setup.out_lost for w in result.winners)
        )
    ):
        path = Path(setup.out) / record_name(number + 1, setup.width, result.names)
        path.write_text(result.record.dumps(), encoding="utf-8")
    return _Game(
        number,
        lineup,
        result.delivered,
        result.ranks,
        result.winners,
        result.replaced,
        result.late,
        result.faults,
    )


def _play_planned(task: tuple[int, tuple[int, ...], int]) -> _Game:
    assert _SETUP is not None
    return _play(_SETUP, *task)


def _worker_start(setup: _Setup, configure: Callable[[], None] | None) -> None:
    # Ctrl-C is the parent's to handle: it stops the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _SETUP
    _SETUP = setup
    if configure is not None:
        configure()


def _log_fault(fault: Fault) -> None:
    log.warning(
        "bot_decision_replaced",
        bot=fault.bot,
        decision=fault.decision,
        kind=fault.kind,
        fault=fault.message,
        where=fault.where,
        traceback=fault.trace or None,
        note="reported once; the same fault again is only counted",
    )


def run_arena(
    specs: Sequence[str],
    games: int,
    players: int | None = None,
    jobs: int | None = None,
    seed: int = 0,
    progress: bool = False,
    configure: Callable[[], None] | None = None,
    deadline_ms: int | None = DEADLINE_MS,
    out: str | Path | None = None,
    out_lost: str | None = None,
    on_fault: Callable[[Fault], None] | None = None,
) -> ArenaResult:
    """Returns the statistics of ``games`` local games between the bots of ``specs``.

    ``players`` defaults to the number of specs (at least 2, at most 5); ``jobs``
    worker processes (default: the CPU count; 1 plays in this process). A progress
    bar goes to stderr when ``progress``. ``configure`` runs in each worker first
    (to set up logging). Decisions keep the server's clock, ``deadline_ms`` each
    (None: no deadline). ``out`` is a directory to write each game's record to,
    only those the bot named ``out_lost`` played and did not win if given. Each
    distinct bot fault goes once to ``on_fault`` (default: a log warning).

    Ctrl-C (KeyboardInterrupt) stops the run at once: the workers are stopped and
    the result holds the games finished, marked ``interrupted``.
    A SPEC may end with ``@key=value[,key=value]``, keyword arguments for the bot's
    class (``search@budget_ms=50``; see ``load_bot``).
    Raises BotSpecError for a bad SPEC, IllegalActionError for a bad player count
    (R-SETUP-1), ValueError for a bad ``games``/``jobs``/``deadline_ms``/``out_lost``.
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
    if deadline_ms is not None and deadline_ms < 1:
        raise ValueError(f"deadline_ms must be 1 or more, got {deadline_ms!r}")
    specs = tuple(specs)
    names = _names([_bot_class(s) for s in specs])
    lost = None
    if out_lost is not None:
        if out is None:
            raise ValueError("out_lost needs out, the directory to write the records to")
        if out_lost not in names:
            raise ValueError(f"out_lost {out_lost!r} names no bot of this run ({', '.join(names)})")
        lost = names.index(out_lost)
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
    setup = _Setup(specs, deadline_ms, None if out is None else str(out), lost, len(str(games)))
    plan = (
        (g, lineup, game_seed(seed, g))
        for g, lineup in enumerate(lineups(len(specs), players, games, seed))
    )
    report = on_fault or _log_fault
    reported: set[str] = set()

    from tqdm import tqdm

    bar = tqdm(total=games, desc="arena", unit="game", file=sys.stderr, disable=not progress)
    outcomes: list[_Game] = []

    def done(game: _Game) -> None:
        outcomes.append(game)
        for fault in game.faults:
            if fault.key not in reported:
                reported.add(fault.key)
                report(fault)
        bar.update()

    interrupted = False
    try:
        if jobs == 1:
            for task in plan:
                done(_play(setup, *task))
        else:
            _run_pool(setup, plan, min(jobs, games), configure, done)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    return ArenaResult(
        games=games,
        players=players,
        seed=seed,
        bots=_stats(names, outcomes),
        finished=len(outcomes),
        interrupted=interrupted,
        pairs=_pairs(names, outcomes),
    )


def _run_pool(
    setup: _Setup,
    plan: Iterator[tuple[int, tuple[int, ...], int]],
    jobs: int,
    configure: Callable[[], None] | None,
    done: Callable[[_Game], None],
) -> None:
    """Plays the planned games in ``jobs`` worker processes. On any exit, Ctrl-C
    included, the workers are terminated and waited for, so none is left behind."""
    pool = multiprocessing.get_context().Pool(
        jobs, initializer=_worker_start, initargs=(setup, configure)
    )
    try:
        for game in pool.imap_unordered(_play_planned, plan):
            done(game)
        pool.close()
    finally:
        pool.terminate()
        pool.join()


def _names(classes: Sequence[Callable[[], Bot]]) -> list[str]:
    """Returns a distinct display name per spec (``name``, then ``name#2``, ...). Bots
    of one name told apart by their SPEC parameters show them (``search@budget_ms=50``)."""
    bases = [str(getattr(cls, "name", None) or getattr(cls, "__name__", "bot")) for cls in classes]
    out: list[str] = []
    for cls, base in zip(classes, bases, strict=True):
        label = getattr(cls, "label", "") if isinstance(cls, BotFactory) else ""
        if label and bases.count(base) > 1:
            base = f"{base}@{label}"
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
    late = [0] * len(names)
    for game in outcomes:
        for seat, bot in enumerate(game.lineup):
            games[bot] += 1
            delivered[bot] += game.delivered[seat]
            replaced[bot] += game.replaced[seat]
            late[bot] += game.late[seat]
            if seat in game.winners:
                sixtieths[bot] += 60 // len(game.winners)
    stats = []
    for i, name in enumerate(names):
        wins = sixtieths[i] / 60
        stats.append(
            BotStats(
                name=name,
                games=games[i],
                wins=wins,
                win_rate=wins / games[i] if games[i] else 0.0,
                ci95=wilson_interval(wins, games[i]),
                mean_delivered=delivered[i] / games[i] if games[i] else 0.0,
                replaced=replaced[i],
                late=late[i],
            )
        )
    return tuple(sorted(stats, key=lambda b: (-b.win_rate, b.name)))


def _pairs(names: Sequence[str], outcomes: Sequence[_Game]) -> dict[str, dict[str, float]]:
    """Returns each bot's head-to-head rate against each other bot it met (see
    ``ArenaResult``), counted seat pair by seat pair."""
    # In halves, so the sums are exact whatever order the games finished in.
    halves: dict[tuple[int, int], int] = {}
    met: dict[tuple[int, int], int] = {}
    for game in outcomes:
        for i, a in enumerate(game.lineup):
            for j, b in enumerate(game.lineup):
                if a == b:
                    continue
                met[a, b] = met.get((a, b), 0) + 1
                ra, rb = game.ranks[i], game.ranks[j]
                halves[a, b] = halves.get((a, b), 0) + (2 if ra < rb else 1 if ra == rb else 0)
    pairs: dict[str, dict[str, float]] = {}
    for (a, b), n in sorted(met.items()):
        pairs.setdefault(names[a], {})[names[b]] = halves[a, b] / 2 / n
    return pairs
