"""What Competition.Status answers, and ``mammamia competition status`` prints:
a competition's phase, schedule and progress, with the finals' results for the
organiser, and for everyone once released."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from server.db.competition import FinalsMatch, Stamp
from server.status import MatchStatus

from .config import PHASES
from .playing import standings_of
from .run import CompetitionRun


@dataclass(frozen=True, slots=True)
class Status:
    """What Competition.Status answers (and ``mammamia competition status`` prints):
    the standings, final reason and matches are empty while ``held``."""

    name: str
    phase: str
    stamps: tuple[Stamp, ...]
    schedule: list[tuple[str, float | None]]
    now: float
    field: tuple[str, ...]
    played: int
    planned: int
    released: bool
    held: bool
    standings: list[dict[str, Any]]
    final_reason: str
    matches: list[FinalsMatch]
    top: int
    confidence: float


async def status(run: CompetitionRun, organiser: bool) -> Status:
    """Returns the competition's status as a caller sees it: with the finals'
    results once released, or for the organiser (``organiser``) at once."""
    state = await run.writer.run(run.store.state, run.name)
    matches = await run.writer.run(run.store.matches, run.name)
    finals = run.competition.finals
    started = state.started if state is not None else (run.competition.start or run.clock())
    played = sum(1 for m in matches if m.status == MatchStatus.FINISHED)
    released = state is not None and state.released is not None
    visible = released or organiser
    standings: list[dict[str, Any]] = []
    if visible and state is not None and state.field is not None:
        standings = state.final if state.final is not None else standings_of(state.field, matches)
    return Status(
        run.name,
        state.phase if state is not None else PHASES[0],
        state.stamps if state is not None else (),
        run.competition.starts(started),
        run.clock(),
        state.field or () if state is not None else (),
        played,
        finals.budget,
        released,
        not visible and bool(matches),
        standings,
        (state.final_reason or "") if visible and state is not None else "",
        matches if visible else [],
        finals.top,
        finals.confidence,
    )
