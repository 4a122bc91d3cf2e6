"""The messages of ``mammamia ladder``: the requests it sends to a server's Ladder
service, and its replies as the JSON-ready data the command prints or lays out.

The command's side of the wire, apart from the ladder's server-side messages
(``server.ladder.wire``): it imports only the generated messages, so a command
starts without loading the server.
"""

from __future__ import annotations

from typing import Any, Final

from mammamia_pb import arena_pb2 as pb

from ..cli_wire import record_request as record_request  # Ladder.GetRecord takes the same

#: ``--by`` of ``mammamia ladder standings``, as StandingsRequest.by (best: unset, as
#: an older client sends it).
BY: Final = {"best": pb.STANDINGS_BY_UNSPECIFIED, "newest": pb.STANDINGS_BY_NEWEST}


def standings_request(players: int = 0, token: str = "", by: str = "best") -> pb.StandingsRequest:
    """Returns the request for a page of the ladder's standings (0: over all player
    counts), each bot by its ``by`` version (best or newest): the first, or the one
    ``token`` names."""
    return pb.StandingsRequest(players=players, page_token=token, by=BY[by])


def bot_stats_request(name: str) -> pb.BotStatsRequest:
    """Returns the request for a ladder bot's statistics."""
    return pb.BotStatsRequest(name=name)


def matches_request(name: str, size: int, token: str = "") -> pb.MatchesRequest:
    """Returns the request for a page of ``size`` of a ladder bot's (every bot's, for
    an empty name) finished matches, newest first: the first, or the one ``token``
    names."""
    return pb.MatchesRequest(name=name, page_size=size, page_token=token)


def results_request(size: int, token: str = "") -> pb.ResultsRequest:
    """Returns the request for a page of ``size`` of the ladder's results, newest
    first: the first, or the one ``token`` names."""
    return pb.ResultsRequest(page_size=size, page_token=token)


def ladder_match_data(msg: pb.MatchSummary) -> dict[str, Any]:
    """Returns a ladder listing entry as ``{"match", "players", "names", "winners",
    "commitment", "set", "voided"}``; ``set`` is ``{"id", "index", "size",
    "rotation"}`` for a match of a duplicate set, else None; ``voided`` is ``{"reason",
    "by"}`` for a voided match, else None."""
    deal_set = msg.deal_set if msg.HasField("deal_set") else None
    return {
        "match": msg.match_id,
        "players": msg.players,
        "names": list(msg.names),
        "winners": list(msg.winners),
        "commitment": msg.commitment,
        "set": None
        if deal_set is None
        else {
            "id": deal_set.set_id,
            "index": deal_set.index,
            "size": deal_set.size,
            "rotation": deal_set.rotation,
        },
        "voided": {"reason": msg.void_reason, "by": msg.voided_by} if msg.voided else None,
    }


def bot_stats_data(msg: pb.BotStatsResponse) -> dict[str, Any]:
    """Returns a BotStats reply as ``{"name", "tallies": [{"players", "games", "wins",
    "delivered"}, ...], "positions": [{"players", "position", "games", "wins",
    "mean_rank"}, ...], "suspended"}``: ``{"reason", "by", "at"}`` (UNIX seconds) for a
    suspended bot, else None."""
    return {
        "name": msg.name,
        "suspended": {
            "reason": msg.suspended,
            "by": msg.suspended_by,
            "at": msg.suspended_at.ToNanoseconds() / 1e9,
        }
        if msg.suspended
        else None,
        "tallies": [
            {"players": t.players, "games": t.games, "wins": t.wins, "delivered": t.delivered}
            for t in msg.tallies
        ],
        "versions": [
            {
                "version": v.version,
                "rating": v.rating,
                "mu": v.mu,
                "sigma": v.sigma,
                "low": v.low,
                "high": v.high,
                "games": v.games,
                "wins": v.wins,
                "first_played": v.first_played.ToNanoseconds() / 1e9
                if v.HasField("first_played")
                else None,
                "last_played": v.last_played.ToNanoseconds() / 1e9
                if v.HasField("last_played")
                else None,
            }
            for v in msg.versions
        ],
        "positions": [
            {
                "players": p.players,
                "position": p.position,
                "games": p.games,
                "wins": p.wins,
                "mean_rank": p.mean_rank,
            }
            for p in msg.positions
        ],
    }


def standings_data(msg: pb.StandingsResponse) -> dict[str, Any]:
    """Returns ``{"matches_finished": N, "standings": [{"rank", "name", "rating", "mu",
    "sigma", "games", "wins", "mean_delivered", "low", "high", "p_better",
    "suspended", "version", "versions", "league"}, ...], "next_page_token", "by",
    "leagues": [{"name", "boss", "bot", "sigmas"}, ...], "moves": [{"name", "at",
    "from", "to", "why", "match_id"}, ...]}`` from a page of a Standings reply
    (``p_better`` None for the last bot; ``suspended`` the reason, None for a bot in
    good standing; ``league`` None, and ``leagues`` and ``moves`` empty, on a ladder
    without leagues)."""
    return {
        "matches_finished": msg.matches_finished,
        "next_page_token": msg.next_page_token,
        "standings": [
            {
                "rank": s.rank,
                "name": s.name,
                "rating": s.rating,
                "mu": s.mu,
                "sigma": s.sigma,
                "games": s.games,
                "wins": s.wins,
                "mean_delivered": s.mean_delivered,
                "low": s.low,
                "high": s.high,
                "p_better": s.p_better if s.HasField("p_better") else None,
                "suspended": s.suspended or None,
                "version": s.version,
                "versions": s.versions,
                "league": s.league or None,
            }
            for s in msg.standings
        ],
        "by": "newest" if msg.by == pb.STANDINGS_BY_NEWEST else "best",
        "leagues": [
            {"name": g.name, "boss": g.boss or None, "bot": g.bot or None, "sigmas": g.sigmas}
            for g in msg.leagues
        ],
        "moves": [
            {
                "name": m.name,
                "at": m.at,
                "from": m.from_league,
                "to": m.to_league,
                "why": m.why,
                "match_id": m.match_id or None,
            }
            for m in msg.moves
        ],
    }


def result_data(msg: pb.LadderResult) -> dict[str, Any]:
    """Returns a page entry of Ladder.Results as ``server.ladder.export`` writes it:
    ``{"match_id", "status" ("finished" or "aborted"), "players", "created_ns",
    "ended_ns" (None without an end), "finish_order" (None for 0), "rated",
    "commitment", "set_id", "set_index" (None outside a set), "void_reason" (None
    unless voided), "seats": [{"seat", "name", "rank" (None for 0), "delivered"
    (None when absent), "position" (None for 0)}, ...]}``."""
    return {
        "match_id": msg.match_id,
        "status": pb.MatchStatus.Name(msg.status).removeprefix("MATCH_STATUS_").lower(),
        "players": msg.players,
        "created_ns": msg.created.ToNanoseconds(),
        "ended_ns": msg.ended.ToNanoseconds() if msg.HasField("ended") else None,
        "finish_order": msg.finish_order or None,
        "rated": msg.rated,
        "commitment": msg.commitment,
        "set_id": msg.deal_set.set_id if msg.HasField("deal_set") else None,
        "set_index": msg.deal_set.index if msg.HasField("deal_set") else None,
        "void_reason": msg.void_reason or None,
        "seats": [
            {
                "seat": s.seat,
                "name": s.name,
                "rank": s.rank or None,
                "delivered": s.delivered if s.HasField("delivered") else None,
                "position": s.position or None,
            }
            for s in msg.seats
        ],
    }


#: How the sequential test's decision is printed.
DECISIONS: Final = {
    pb.SPRT_DECISION_UNSPECIFIED: None,
    pb.SPRT_DECISION_BETTER: "better",
    pb.SPRT_DECISION_NOT_BETTER: "not better",
}


def challenge_request(
    name: str,
    version: str,
    opponents: list[str],
    players: int,
    matches: int,
    duplicate: bool,
    sprt: tuple[float, float, float, float] | None,
) -> pb.ChallengeRequest:
    """Returns the request for a scrimmage of ``name`` against ``opponents``; ``sprt``
    (elo0, elo1, alpha, beta) makes it the sequential test."""
    request = pb.ChallengeRequest(
        name=name,
        version=version,
        opponents=opponents,
        players=players,
        matches=matches,
        duplicate=duplicate,
    )
    if sprt is not None:
        elo0, elo1, alpha, beta = sprt
        request.sprt.CopyFrom(pb.ScrimmageSprt(elo0=elo0, elo1=elo1, alpha=alpha, beta=beta))
    return request


def scrimmage_data(msg: pb.ScrimmageReport) -> dict[str, Any]:
    """Returns a scrimmage's report as JSON-ready data."""
    data: dict[str, Any] = {
        "scrimmage": msg.scrimmage_id,
        "played": msg.played,
        "planned": msg.planned,
        "done": msg.done,
        "stopped": msg.stopped or None,
        "table": [
            {
                "name": line.name,
                "version": line.version,
                "games": line.games,
                "wins": line.wins,
                "win_rate": line.win_rate,
                "low": line.low,
                "high": line.high,
                "mean_rank": line.mean_rank,
                "mean_delivered": line.mean_delivered,
            }
            for line in msg.lines
        ],
        "matches": [
            {
                "match_id": m.match_id,
                "names": list(m.names),
                "status": pb.MatchStatus.Name(m.status).removeprefix("MATCH_STATUS_").lower(),
                "ranks": list(m.ranks),
            }
            for m in msg.matches
        ],
    }
    if msg.HasField("test"):
        t = msg.test
        data["sprt"] = {
            "elo0": t.sprt.elo0,
            "elo1": t.sprt.elo1,
            "alpha": t.sprt.alpha,
            "beta": t.sprt.beta,
            "llr": t.llr,
            "lower": t.lower,
            "upper": t.upper,
            "decision": DECISIONS[t.decision],
            "pairs": t.pairs,
            "pentanomial": list(t.pentanomial),
        }
    return data


def scrimmages_request(name: str, size: int, token: str = "") -> pb.ScrimmagesRequest:
    """Returns the request for a page of ``size`` of a bot's (every bot's, for an empty
    name) scrimmages, newest first: the first, or the one ``token`` names."""
    return pb.ScrimmagesRequest(name=name, page_size=size, page_token=token)


def scrimmage_summary_data(msg: pb.ScrimmageSummary) -> dict[str, Any]:
    """Returns a kept scrimmage as JSON-ready data: who asked, against whom, when
    (UNIX seconds; ended None while it plays), and its last report."""
    return {
        "name": msg.name,
        "version": msg.version,
        "opponents": list(msg.opponents),
        "players": msg.players,
        "duplicate": msg.duplicate,
        "created": msg.created.ToNanoseconds() / 1e9,
        "ended": msg.ended.ToNanoseconds() / 1e9 if msg.HasField("ended") else None,
        **scrimmage_data(msg.report),
    }
