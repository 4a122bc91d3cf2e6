"""The messages of ``mammamia competition``: the requests it sends to a server's
Competition service, and its replies as the JSON-ready data the command prints.
Imports only the generated messages, so that a command starts fast."""

from __future__ import annotations

from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from mammamia_pb import arena_pb2 as pb

#: The phases in order (as server.competition.config.PHASES; the enum's values 1..5).
PHASES = ("registration", "ladder", "freeze", "finals", "closed")


def status_request() -> pb.CompetitionStatusRequest:
    """Returns the request for a competition's status."""
    return pb.CompetitionStatusRequest()


def release_request() -> pb.ReleaseResultsRequest:
    """Returns the request that releases the finals' results."""
    return pb.ReleaseResultsRequest()


def advance_request(reason: str, to: str | None) -> pb.AdvanceRequest:
    """Returns the request to move to phase ``to`` (None: the next) for ``reason``."""
    phase = pb.CompetitionPhase.ValueType(0 if to is None else PHASES.index(to) + 1)
    return pb.AdvanceRequest(to=phase, reason=reason)


def _phase(value: int) -> str:
    return PHASES[value - 1] if 1 <= value <= len(PHASES) else "unspecified"


def _when(msg: Timestamp) -> float:
    return msg.seconds + msg.nanos / 1e9


def status_data(msg: pb.CompetitionStatusResponse) -> dict[str, Any]:
    """Returns a status reply as ``{"name", "phase", "now", "stamps", "schedule",
    "field", "played", "planned", "released", "held", "top", "confidence",
    "final_reason", "standings", "matches"}`` (times as UNIX seconds)."""
    return {
        "name": msg.name,
        "phase": _phase(msg.phase),
        "now": _when(msg.now),
        "stamps": [
            {"phase": _phase(s.phase), "at": _when(s.at), "who": s.who, "reason": s.reason}
            for s in msg.stamps
        ],
        "schedule": [
            {"phase": _phase(s.phase), "starts": _when(s.starts) if s.HasField("starts") else None}
            for s in msg.schedule
        ],
        "field": list(msg.field),
        "played": msg.matches_played,
        "planned": msg.matches_planned,
        "released": msg.released,
        "held": msg.held,
        "top": msg.top,
        "confidence": msg.confidence,
        "final_reason": msg.final_reason,
        "standings": [
            {
                "rank": s.rank,
                "name": s.name,
                "mu": s.mu,
                "sigma": s.sigma,
                "low": s.low,
                "high": s.high,
                "p_above_next": s.p_above_next,
                "matches": s.matches,
                "wins": s.wins,
                "absent": s.absent,
                "sets_won_against_next": s.sets_won_against_next,
                "sets_lost_against_next": s.sets_lost_against_next,
                "evidence_above_next": s.evidence_above_next,
            }
            for s in msg.standings
        ],
        "matches": [
            {
                "match": m.match_id,
                "round": m.round,
                "set": m.deal_set.set_id,
                "index": m.deal_set.index,
                "names": list(m.names),
                "commitment": m.commitment,
                "ranks": list(m.ranks),
                "absent": list(m.absent),
            }
            for m in msg.matches
        ],
    }
