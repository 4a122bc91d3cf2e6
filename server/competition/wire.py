"""The Competition service's messages (``mammamia.v1.Competition``): a status as the
server builds it, and the phases' names to their enum and back."""

from __future__ import annotations

from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from mammamia_pb import arena_pb2 as pb

from ..db.competition import FinalsMatch
from ..ladder.wire import deal_set_message
from ..status import MatchStatus
from ..wire import STATUSES
from .config import PHASES
from .view import Status


def phase_message(phase: str) -> pb.CompetitionPhase.ValueType:
    """Returns the enum value of a phase's name."""
    return pb.CompetitionPhase.ValueType(PHASES.index(phase) + 1)


def phase_of(value: int) -> str | None:
    """Returns the phase an enum value names, or None for UNSPECIFIED (or unknown)."""
    return PHASES[value - 1] if 1 <= value <= len(PHASES) else None


def _time(at: float) -> Timestamp:
    stamp = Timestamp()
    stamp.FromNanoseconds(round(at * 1e9))
    return stamp


def standing_message(line: dict[str, Any]) -> pb.FinalStanding:
    """Returns a line of the finals' table (a dict as ``server.competition.playing``
    makes it)."""
    return pb.FinalStanding(
        rank=int(line["rank"]),
        name=str(line["name"]),
        mu=float(line["mu"]),
        sigma=float(line["sigma"]),
        low=float(line["low"]),
        high=float(line["high"]),
        p_above_next=float(line.get("p_better") or 0.0),
        matches=int(line.get("matches", 0)),
        wins=int(line.get("wins", 0)),
        absent=int(line.get("absent", 0)),
        sets_won_against_next=int(line.get("sets_won", 0)),
        sets_lost_against_next=int(line.get("sets_lost", 0)),
        evidence_above_next=float(line.get("evidence") or 0.0),
    )


def match_message(m: FinalsMatch) -> pb.CompetitionMatch:
    """Returns a finals match as the wire shows it."""
    return pb.CompetitionMatch(
        match_id=m.match_id,
        round=m.round,
        deal_set=deal_set_message(m.set_id, m.set_index, len(m.names)),
        names=list(m.names),
        commitment=m.commitment,
        status=STATUSES[MatchStatus(m.status)],
        ranks=list(m.ranks),
        absent=list(m.absent),
    )


def status_response(s: Status) -> pb.CompetitionStatusResponse:
    """Returns the reply of Status, Advance and Release."""
    msg = pb.CompetitionStatusResponse(
        name=s.name,
        phase=phase_message(s.phase),
        field=list(s.field),
        matches_played=s.played,
        matches_planned=s.planned,
        released=s.released,
        held=s.held,
        final_reason=s.final_reason,
        top=s.top,
        confidence=s.confidence,
    )
    msg.now.CopyFrom(_time(s.now))
    for stamp in s.stamps:
        msg.stamps.append(
            pb.PhaseStamp(
                phase=phase_message(stamp.phase),
                at=_time(stamp.at),
                who=stamp.who,
                reason=stamp.reason,
            )
        )
    for phase, at in s.schedule:
        scheduled = pb.ScheduledPhase(phase=phase_message(phase))
        if at is not None:
            scheduled.starts.CopyFrom(_time(at))
        msg.schedule.append(scheduled)
    msg.standings.extend(standing_message(line) for line in s.standings)
    msg.matches.extend(match_message(m) for m in s.matches)
    return msg
