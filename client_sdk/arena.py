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
from mammamia.sprt import PAIR_SCORES, Decision, Sprt, elo, game_variance, pair_halves, variance

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


@dataclass(frozen=True)
class SprtResult:
    """A sequential test between two bots (``mammamia.sprt``): ``a`` the baseline,
    ``b`` the candidate; the pentanomial of B's pair scores, B's games lost, tied and
    won (``trinomial``), the LLR after each pair and its bounds, and the decision
    (None when the game cap came first or the run was ``interrupted``)."""

    a: str
    b: str
    test: Sprt
    pentanomial: tuple[int, ...]
    trinomial: tuple[int, int, int]
    llr_by_pair: tuple[float, ...]
    decision: Decision | None
    games: int
    cap: int
    seed: int
    interrupted: bool = False

    @property
    def llr(self) -> float:
        """Returns the LLR after the last pair (0 before any)."""
        return self.llr_by_pair[-1] if self.llr_by_pair else 0.0

    @property
    def fixed_games(self) -> int:
        """Returns the games a fixed-count arena (independent games, each its own
        deal) needs for the same error rates, at the game score's variance measured."""
        return self.test.fixed_count(game_variance(self.trinomial))

    @property
    def fixed_pair_games(self) -> int:
        """Returns the games a fixed number of deal pairs needs for the same error
        rates, at the pair score's variance measured."""
        return 2 * self.test.fixed_count(variance(self.pentanomial))

    @property
    def score(self) -> float:
        """Returns B's mean score per game (a win 1, a shared first 1/2), 0.5 before any."""
        pairs = sum(self.pentanomial)
        return sum(k * c for k, c in enumerate(self.pentanomial)) / (4 * pairs) if pairs else 0.5

    def to_json(self) -> dict[str, Any]:
        """Returns the result as JSON: the names, the test, the decision, the counts
        and the running LLR."""
        lower, upper = self.test.bounds
        return {
            "a": self.a,
            "b": self.b,
            "elo0": self.test.elo0,
            "elo1": self.test.elo1,
            "alpha": self.test.alpha,
            "beta": self.test.beta,
            "bounds": [lower, upper],
            "decision": self.decision,
            "llr": self.llr,
            "games": self.games,
            "pairs": len(self.llr_by_pair),
            "cap": self.cap,
            "seed": self.seed,
            "interrupted": self.interrupted,
            "pentanomial": list(self.pentanomial),
            "score": self.score,
            "elo": elo(self.score),
            "trinomial": list(self.trinomial),
            "fixed_games": self.fixed_games,
            "fixed_pair_games": self.fixed_pair_games,
            "llr_by_pair": list(self.llr_by_pair),
        }

    def summary(self) -> str:
        """Returns the result as a few lines of text."""
        lower, upper = self.test.bounds
        t = self.test
        verdict = (
            f"{self.b} is {self.decision} than {self.a}"
            if self.decision == "better"
            else f"{self.b} is not better than {self.a}"
            if self.decision
            else "undecided" + (" (interrupted)" if self.interrupted else " at the game cap")
        )
        gain = elo(self.score)
        return "\n".join(
            [
                f"sprt: {self.b} against {self.a}: elo0 {t.elo0:g}, elo1 {t.elo1:g}, "
                f"alpha {t.alpha:g}, beta {t.beta:g}",
                f"LLR {self.llr:.3f}, bounds ({lower:.3f}, {upper:.3f}), after "
                f"{self.games} games ({len(self.llr_by_pair)} deal pairs): {verdict}",
                f"pentanomial (pairs that scored 0, 1/2, 1, 3/2, 2 for {self.b}): "
                + " ".join(str(c) for c in self.pentanomial),
                f"score {self.score:.3f} per game for {self.b} (Elo {gain:+.0f})",
                f"a fixed count with the same error rates, at the variance measured: "
                f"{self.fixed_games} independent games (the arena without --sprt), or "
                f"{self.fixed_pair_games} in deal pairs",
            ]
        )


def sprt_plan(seed: int, cap: int) -> Iterator[tuple[int, tuple[int, ...], int]]:
    """Yields the games of a sequential test: deal pairs, each deal (one seed) played
    with A in seat 0, then with the seats swapped; at most ``cap`` games."""
    for game in range(cap - cap % 2):
        yield game, ((0, 1) if game % 2 == 0 else (1, 0)), game_seed(seed, game // 2)


def run_sprt(
    a: str,
    b: str,
    test: Sprt,
    cap: int = 20_000,
    jobs: int | None = None,
    seed: int = 0,
    progress: bool = False,
    configure: Callable[[], None] | None = None,
    deadline_ms: int | None = DEADLINE_MS,
    on_fault: Callable[[Fault], None] | None = None,
    on_pair: Callable[[int, float], None] | None = None,
) -> SprtResult:
    """Returns the sequential test of bot ``b`` against bot ``a`` (SPECs, as
    :func:`run_arena` takes them): two-player deal pairs until the LLR leaves the
    bounds of ``test`` or ``cap`` games are played (``mammamia.sprt``).

    The pairs are weighed in order, whatever order the workers finish them in, so a
    seed gives the same decision after the same pairs. ``on_pair(pairs, llr)`` is
    called after each pair. Ctrl-C stops at once, the result marked ``interrupted``.
    Raises BotSpecError for a bad SPEC and ValueError for a cap under 2 or a bad
    ``jobs``/``deadline_ms``.
    """
    if cap < 2:
        raise ValueError(f"the game cap must be 2 or more (one deal pair), got {cap!r}")
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    if jobs < 1:
        raise ValueError(f"jobs must be 1 or more, got {jobs!r}")
    if deadline_ms is not None and deadline_ms < 1:
        raise ValueError(f"deadline_ms must be 1 or more, got {deadline_ms!r}")
    names = _names([_bot_class(a), _bot_class(b)])
    setup = _Setup((a, b), deadline_ms, None, None, len(str(cap)))
    report = on_fault or _log_fault
    reported: set[str] = set()
    counts = [0] * PAIR_SCORES
    games = [0, 0, 0]
    llrs: list[float] = []
    waiting: dict[int, _Game] = {}
    decision: Decision | None = None

    from tqdm import tqdm

    lower, upper = test.bounds
    bar = tqdm(total=cap, desc="sprt", unit="game", file=sys.stderr, disable=not progress)

    class _Decided(Exception):
        pass

    def done(game: _Game) -> None:
        nonlocal decision
        for fault in game.faults:
            if fault.key not in reported:
                reported.add(fault.key)
                report(fault)
        bar.update()
        waiting[game.number] = game
        # Weigh the pairs in order: the next pair once both its games are in.
        while 2 * len(llrs) in waiting and 2 * len(llrs) + 1 in waiting:
            first, second = waiting.pop(2 * len(llrs)), waiting.pop(2 * len(llrs) + 1)
            ranks = ((first.ranks[0], first.ranks[1]), (second.ranks[1], second.ranks[0]))
            counts[pair_halves(*ranks)] += 1
            for a_rank, b_rank in ranks:
                games[0 if b_rank > a_rank else 1 if b_rank == a_rank else 2] += 1
            llrs.append(test.llr(counts))
            bar.set_postfix_str(f"LLR {llrs[-1]:.2f} ({lower:.2f}, {upper:.2f})")
            if on_pair is not None:
                on_pair(len(llrs), llrs[-1])
            decision = test.decide(llrs[-1])
            if decision is not None:
                raise _Decided

    interrupted = False
    plan = sprt_plan(seed, cap)
    try:
        if jobs == 1:
            for task in plan:
                done(_play(setup, *task))
        else:
            _run_pool(setup, plan, min(jobs, cap), configure, done)
    except _Decided:
        pass
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    return SprtResult(
        a=names[0],
        b=names[1],
        test=test,
        pentanomial=tuple(counts),
        trinomial=(games[0], games[1], games[2]),
        llr_by_pair=tuple(llrs),
        decision=decision,
        games=2 * len(llrs),
        cap=cap,
        seed=seed,
        interrupted=interrupted,
    )
