"""The competition as the page shows it (``GET /api/competition``): what
Competition.Status answers to anyone, as JSON.

It is read through ``server.competition.view.status`` with ``organiser`` false, so
the page shows exactly what the public may see: the finals' table, final reason
and matches stay out until the organiser releases them.
"""

from __future__ import annotations

from typing import Any

from ..competition.config import PHASE_RULES, PHASES
from ..competition.run import CompetitionRun
from ..competition.view import Status, status
from ..db.competition import FinalsMatch


def _line(line: dict[str, Any]) -> dict[str, Any]:
    return {
        "rank": int(line["rank"]),
        "name": str(line["name"]),
        "mu": float(line["mu"]),
        "sigma": float(line["sigma"]),
        "low": float(line["low"]),
        "high": float(line["high"]),
        "p_better": None if line.get("p_better") is None else float(line["p_better"]),
        "matches": int(line.get("matches", 0)),
        "wins": int(line.get("wins", 0)),
        "absent": int(line.get("absent", 0)),
        "sets_won": int(line.get("sets_won", 0)),
        "sets_lost": int(line.get("sets_lost", 0)),
        "evidence": None if line.get("evidence") is None else float(line["evidence"]),
    }


def _match(m: FinalsMatch) -> dict[str, Any]:
    return {
        "match": m.match_id,
        "round": m.round,
        "names": list(m.names),
        "status": m.status,
        "ranks": list(m.ranks),
        "absent": list(m.absent),
    }


def status_json(s: Status) -> dict[str, Any]:
    """Returns a competition's status, as the public sees it, as JSON."""
    return {
        "name": s.name,
        "phase": s.phase,
        "rules": PHASE_RULES[s.phase],
        "now": s.now,
        "schedule": [
            {"phase": phase, "starts": at, "rules": PHASE_RULES[phase]} for phase, at in s.schedule
        ],
        "stamps": [
            {"phase": t.phase, "at": t.at, "who": t.who, "reason": t.reason} for t in s.stamps
        ],
        "phases": list(PHASES),
        "field": list(s.field),
        "played": s.played,
        "planned": s.planned,
        "released": s.released,
        "held": s.held,
        "top": s.top,
        "confidence": s.confidence,
        "final_reason": s.final_reason,
        "standings": [_line(line) for line in s.standings],
        "matches": [_match(m) for m in s.matches],
    }


async def held_back(run: CompetitionRun | None, match_id: str) -> bool:
    """Returns whether ``match_id`` is a finals match of the competition whose results
    are not released yet (its replay or live view would show them). Reads on the
    competition's writer thread."""
    if run is None:
        return False
    state = await run.writer.run(run.store.state, run.name)
    if state is not None and state.released is not None:
        return False
    matches = await run.writer.run(run.store.matches, run.name)
    return any(m.match_id == match_id for m in matches)


async def public_status(run: CompetitionRun | None) -> dict[str, Any]:
    """Returns ``{"competition": ...}``: the status as anyone sees it, or None when
    the server runs no competition. Reads on the competition's writer thread."""
    if run is None:
        return {"competition": None}
    return {"competition": status_json(await status(run, organiser=False))}
