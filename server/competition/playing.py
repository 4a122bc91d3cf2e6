"""The finals as a server plays them: rounds of tables, each a duplicate set whose
matches are seated through the ladder's lobby (the finalists are told their seats
on their ordinary Enter streams), until the stopping rule says the order is certain
or the match budget is spent.

The rules are ``server.competition.finals``'s (pure): which tables a round has,
the finals' table from their results alone (ratings afresh) and the stopping rule.
This module plays them:

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
import secrets
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import structlog

from mammamia.fairness import DealSet, commitment, new_server_seed
from server.db.competition import FinalsMatch, FinalsTable, StampError
from server.ladder.lobby import StartedMatch
from server.status import MatchStatus

from . import finals

if TYPE_CHECKING:
    from .run import CompetitionRun

log = structlog.get_logger()

#: How often a missing finalist is looked for during its grace period (seconds).
LOOK_S = 0.2

#: An entry on another host counts as connected while its heartbeat is this fresh (s).
FRESH_S = 10.0


#: Why the finals stopped, as the closing stamp says it.
REASONS = {
    "settled": "every adjacent pair of the top was ordered with the confidence asked",
    "budget": "the match budget was spent",
    "closed": "the competition closed before the finals ended",
}


def results_of(matches: Sequence[FinalsMatch]) -> list[finals.Played]:
    """Returns the finished finals matches, in the order played, as the final table
    takes them."""
    return [
        finals.Played(m.names, m.ranks, m.absent, m.set_id)
        for m in matches
        if m.status == MatchStatus.FINISHED
    ]


def table_of(field: Sequence[str], matches: Sequence[FinalsMatch]) -> finals.FinalTable:
    """Returns the finals' table from the finished matches alone (the aborted ones
    count for its balance only)."""
    cut = [m.names for m in matches if m.status == MatchStatus.ABORTED]
    return finals.final_table(field, results_of(matches), cut)


def standings_of(field: Sequence[str], matches: Sequence[FinalsMatch]) -> list[dict[str, Any]]:
    """Returns the finals' table from the finished matches alone, as stored and sent
    (the lines of ``server.competition.finals.Line`` as dicts)."""
    return [asdict(line) for line in table_of(field, matches).lines]


def rounds_of(field: Sequence[str], tables: Sequence[FinalsTable]) -> list[finals.Round]:
    """Returns the rounds played so far (from the stored tables), as the finals'
    rules take them to plan the next."""
    by_round: dict[int, list[FinalsTable]] = {}
    for t in tables:
        by_round.setdefault(t.round, []).append(t)
    rounds = []
    for index, number in enumerate(sorted(by_round)):
        seated = [finals.Table(t.names) for t in sorted(by_round[number], key=lambda t: t.table)]
        sitting = {n for t in seated for n in t.names}
        rounds.append(
            finals.Round(index, tuple(seated), tuple(n for n in field if n not in sitting))
        )
    return rounds


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
    next_matches = finals.round_matches(len(field), rules.tables)
    log.info("competition_finals_started", competition=run.name, field=list(field))
    reason: str | None = None
    while reason is None:
        stopped = finals.stop(
            table_of(field, matches), rules.top, rules.confidence, rules.budget, next_matches
        )
        if stopped is not None:
            reason = stopped.reason
            break
        if run.phase != "finals":
            reason = "closed"
            break
        if not matches and next_matches > rules.budget:
            reason = "budget"  # not even one round fits
            break
        played = rounds_of(field, await run.writer.run(run.store.tables, run.name))
        plan = finals.next_round(field, rules.tables, played, run.name)
        number = len(played) + 1
        log.info(
            "competition_round",
            competition=run.name,
            round=number,
            tables=[list(t.names) for t in plan.tables],
            byes=list(plan.byes),
        )
        await asyncio.gather(
            *(_play_table(run, number, i, t.names) for i, t in enumerate(plan.tables))
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
        for index, seated in enumerate(finals.rotations(finals.Table(names))):
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
