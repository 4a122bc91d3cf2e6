"""The finals as a server plays them: rounds of tables, each a duplicate set whose
matches are seated through the ladder's lobby (the finalists are told their seats
on their ordinary Enter streams), until the stopping rule says the order is certain
or the match budget is spent.

The rules of the finals are the pure functions at the top: which tables a round
has (:func:`round_tables`), the finals' table from their results alone
(:func:`table`: ratings afresh, ``server.ladder.ratings.replay``, with intervals
and neighbours' confidence, ``server.ladder.confidence``) and the stopping rule
(:func:`stop`). The rest plays them:

- before each match, every finalist not connected (no Enter stream open on any
  host) is waited for up to the file's ``grace``; one still missing is marked
  absent, and its seat is played by the server's default policy (a seat that
  never joins: the match starts after the ladder's start timeout, and its
  decisions default);
- each match is recorded as the competition's (``competition_matches``), seated
  through the ladder's lobby, and its result stored apart from the ladder's: the
  ladder never rates it (ratings start afresh for the finals);
- each table's records stay sealed until its last match has ended, then are
  completed with its seed, as the ladder's duplicate sets are;
- after each round the stopping rule is applied to every finished finals match;
  the final table is stored with why the finals stopped, and the competition is
  stamped closed (who: ``finals``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import structlog

from mammamia.fairness import DealSet, commitment, new_server_seed
from server.db.competition import FinalsMatch, FinalsTable, StampError
from server.ladder.confidence import neighbours
from server.ladder.lobby import StartedMatch
from server.ladder.ratings import Rating, Result, initial, replay
from server.status import MatchStatus

if TYPE_CHECKING:
    from .run import CompetitionRun

log = structlog.get_logger()

#: How often a missing finalist is looked for during its grace period (seconds).
LOOK_S = 0.2

#: An entry on another host counts as connected while its heartbeat is this fresh (s).
FRESH_S = 10.0


#: Why the finals stopped, as the final table and the closing stamp say it.
REASONS = {
    "settled": "every adjacent pair of the top was ordered with the confidence asked",
    "budget": "the match budget was spent",
    "closed": "the competition closed before the finals ended",
}


def round_tables(
    field: Sequence[str], sizes: Sequence[int], rng: random.Random
) -> list[tuple[str, ...]]:
    """Returns one round: tables that seat every finalist once, of one size from
    ``sizes`` (the largest that divides the field; else the field cut into tables
    as even as the sizes allow), finalists drawn into tables at random."""
    names = list(field)
    rng.shuffle(names)
    n = len(names)
    fitting = [s for s in sorted(sizes, reverse=True) if n % s == 0]
    if fitting:
        size = fitting[0]
        return [tuple(names[i : i + size]) for i in range(0, n, size)]
    low, high = min(sizes), max(sizes)
    count = max(1, -(-n // high))  # the fewest tables of at most ``high``
    while n // count < low and count > 1:
        count -= 1
    tables: list[tuple[str, ...]] = []
    start = 0
    for t in range(count):
        size = n // count + (1 if t < n % count else 0)
        tables.append(tuple(names[start : start + size]))
        start += size
    return tables


def table(field: Sequence[str], results: Sequence[FinalsMatch]) -> list[dict[str, Any]]:
    """Returns the finals' table from the finished finals matches alone: every
    finalist's fresh rating, best conservative rating first, with its interval,
    the chance it is better than the next, its matches, wins and absences."""
    finished = [m for m in results if m.status == MatchStatus.FINISHED]
    ratings = replay(Result(m.names, m.ranks) for m in finished)
    rated: dict[str, Rating] = {n: ratings.get(n, initial()) for n in field}
    order = sorted(field, key=lambda n: (-rated[n].conservative, n))
    lines = neighbours([rated[n] for n in order])
    out: list[dict[str, Any]] = []
    for rank, (name, line) in enumerate(zip(order, lines, strict=True), start=1):
        r = rated[name]
        out.append(
            {
                "rank": rank,
                "name": name,
                "mu": r.mu,
                "sigma": r.sigma,
                "low": line.low,
                "high": line.high,
                "p_above_next": line.p_better,
                "matches": sum(1 for m in finished if name in m.names),
                "wins": sum(
                    1 for m in finished if name in m.names and m.ranks[m.names.index(name)] == 1
                ),
                "absent": sum(1 for m in finished if name in m.absent),
            }
        )
    return out


def stop(
    lines: Sequence[dict[str, Any]], played: int, *, top: int, confidence: float, budget: int
) -> str | None:
    """Returns why the finals stop now (``settled``: every adjacent pair of the top
    ``top`` ordered with at least ``confidence``; ``budget``: ``budget`` matches
    played), or None while they go on."""
    head = lines[:top]
    if played and all(
        (line["p_above_next"] or 0.0) >= confidence for line in head[: len(head) - 1]
    ):
        return "settled"
    if played >= budget:
        return "budget"
    return None


def standings_of(field: Sequence[str], matches: Sequence[FinalsMatch]) -> list[dict[str, Any]]:
    """Returns the finals' table from the finished matches alone, as stored and sent."""
    return table(field, matches)


async def play_finals(run: CompetitionRun) -> None:
    """Plays the finals' rounds until they stop, then stores the final table and
    stamps the competition closed; returns early, the table stored with the reason
    ``closed``, when the competition closes first (the round under way ends)."""
    state = await run.writer.run(run.store.state, run.name)
    if state is None or state.field is None or state.final is not None:
        return
    field = state.field
    rules = run.competition.finals
    matches = await run.writer.run(run.store.matches, run.name)
    round_no = max((m.round for m in matches), default=0)
    rng = random.Random(f"{run.name}:{round_no}")
    log.info("competition_finals_started", competition=run.name, field=list(field))
    reason: str | None = None
    while reason is None:
        played = sum(1 for m in matches if m.status == MatchStatus.FINISHED)
        reason = stop(
            table(field, matches),
            played,
            top=rules.top,
            confidence=rules.confidence,
            budget=rules.budget,
        )
        if reason is not None:
            break
        if run.phase != "finals":
            reason = "closed"
            break
        tables = round_tables(field, rules.tables, rng)
        if played + sum(len(t) for t in tables) > rules.budget:
            reason = "budget"
            break
        round_no += 1
        log.info("competition_round", competition=run.name, round=round_no, tables=len(tables))
        await asyncio.gather(
            *(_play_table(run, round_no, number, names) for number, names in enumerate(tables))
        )
        matches = await run.writer.run(run.store.matches, run.name)
    final = standings_of(field, matches)
    await run.writer.run(run.store.end_finals, run.name, final, reason)
    log.info("competition_finals_ended", competition=run.name, reason=reason)
    if run.phase != "closed":
        with contextlib.suppress(StampError):  # the organiser closed it meanwhile
            await run.stamp("closed", "finals", REASONS[reason])


async def _play_table(
    run: CompetitionRun, round_no: int, number: int, names: tuple[str, ...]
) -> None:
    """Plays one table: its deal once for every rotation of its seats."""
    n = len(names)
    set_id = f"final-{secrets.token_hex(8)}"
    seed = new_server_seed()
    row = FinalsTable(set_id, round_no, number, names, seed, commitment(set_id, seed))
    await run.writer.run(run.store.start_table, run.name, row)
    try:
        for index in range(n):
            seated = tuple(names[(seat - index) % n] for seat in range(n))
            await _play_match(run, round_no, seated, DealSet(set_id, index, n), seed)
    finally:
        await run.writer.run(run.store.reveal_table, set_id)


async def _present(run: CompetitionRun, names: Sequence[str]) -> list[str]:
    """Returns the finalists of ``names`` still not connected after the grace period."""
    lobby = run.ladder.lobby
    deadline = run.clock() + run.competition.finals.grace
    while True:
        missing = [n for n in names if not lobby.has_entered(n)]
        if missing and run.store.shared:
            elsewhere = await run.writer.run(run.store.connected, missing, run.clock() - FRESH_S)
            missing = [n for n in missing if n not in elsewhere]
        if not missing or run.clock() >= deadline:
            return missing
        await asyncio.sleep(LOOK_S)


async def _play_match(
    run: CompetitionRun, round_no: int, names: tuple[str, ...], place: DealSet, seed: str
) -> None:
    absent = await _present(run, names)
    ladder = run.ladder
    match_id, tokens, committed = await ladder.matches.create(names, (place, seed))
    started = StartedMatch(match_id, names, tuple(tokens), committed, place)
    await run.writer.run(
        run.store.start_match,
        run.name,
        match_id,
        place.set_id,
        place.index,
        round_no,
        names,
        committed,
        absent,
    )
    if absent:
        log.info("competition_absent", competition=run.name, match=match_id, absent=absent)
    if ladder.store.shared and not ladder.duplicate:
        # The shared lobby tells the bots on other hosts from the ladder's row.
        await run.writer.run(
            run.store.publish_ladder_match,
            match_id,
            names,
            committed,
            place.set_id,
            place.index,
            run.host_id,
            run.advertise(),
            tokens,
        )
    try:
        await ladder.lobby.seat(started)
        end = await ladder.matches.result(match_id)
    finally:
        ladder.lobby.unseat(started)
    await run.writer.run(run.store.finish_match, match_id, end.status, end.ranks, end.delivered)
    log.info(
        "competition_match_finished",
        competition=run.name,
        match=match_id,
        names=list(names),
        ranks=list(end.ranks),
    )
