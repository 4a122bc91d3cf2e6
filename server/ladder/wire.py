"""The ladder's messages: where its values become protobuf messages.

Out: assignments (a seat to play), registrations, standings with their intervals
(a page of them), a bot's statistics, the ladder's match listings and its results,
a scrimmage's reports. In: a scrimmage asked for (:func:`challenge_of`).
The game itself never passes through the ladder (seats are played with the Seat
service; a record is stored text, answered with the core's ``GameRecord``).

The core's codec (``server.wire``) knows nothing of the ladder; this module builds
on it (match statuses, game records), so the arrow runs from the ladder down.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from mammamia.sprt import Sprt
from mammamia_pb import arena_pb2 as pb

from ..db.ladder.discipline import Suspension
from ..db.ladder.leagues import League, Move
from ..db.ladder.reads import BEST, NEWEST
from ..db.ladder.results import ResultRow
from ..db.ladder.rows import LadderMatch, PositionTally, Standing, Tally, VersionLine
from ..db.ladder.scrimmages import StoredScrimmage
from ..paging import Key, token_of
from ..wire import STATUSES
from ..wire import game_record as game_record  # Ladder.GetRecord answers as Spectate does
from . import standings
from .confidence import interval
from .lobby import Assignment
from .ratings import Rating
from .scrimmage import Challenge, Report, ScrimmageError, stored_report

STANDINGS: Final = "ladder.standings"
"""The listing a Standings page token belongs to (``server.paging``)."""


def assignment_message(a: Assignment) -> pb.Assignment:
    """Returns a ladder assignment (a seat to play) as a message."""
    msg = pb.Assignment(
        match_id=a.match_id,
        seat_token=a.seat_token,
        seat=a.seat,
        players=a.players,
        commitment=a.commitment,
        host_address=a.host_address,
    )
    if a.set_id is not None:
        msg.deal_set.CopyFrom(deal_set_message(a.set_id, a.set_index, a.players))
    return msg


def notice_message(text: str) -> pb.Assignment:
    """Returns a notice on an Enter stream: an Assignment with no match, ``waiting``
    saying why the bot waits."""
    return pb.Assignment(waiting=text)


def deal_set_message(set_id: str, index: int, players: int) -> pb.DealSet:
    """Returns a match's place in a duplicate set of ``players`` matches."""
    return pb.DealSet(set_id=set_id, index=index, size=players, rotation=index)


def register_response(name: str, key: str) -> pb.RegisterResponse:
    """Returns the reply to Ladder.Register."""
    return pb.RegisterResponse(name=name, key=key)


def standing_message(s: Standing, low: float, high: float, p_better: float | None) -> pb.Standing:
    """Returns one line of the ladder's standings as a message, with its interval and
    the probability that it is better than the next line."""
    msg = pb.Standing(
        rank=s.rank,
        name=s.name,
        rating=s.rating,
        mu=s.mu,
        sigma=s.sigma,
        games=s.games,
        wins=s.wins,
        mean_delivered=s.mean_delivered,
        low=low,
        high=high,
        suspended=s.suspended or "",
        version=s.version,
        versions=s.versions,
        league=s.league,
    )
    if p_better is not None:
        msg.p_better = p_better
    return msg


#: StandingsRequest.by as ``LadderReads.standings`` takes it, and back.
STANDINGS_BY: Final[dict[int, str]] = {
    pb.STANDINGS_BY_UNSPECIFIED: BEST,
    pb.STANDINGS_BY_BEST: BEST,
    pb.STANDINGS_BY_NEWEST: NEWEST,
}
BY_MESSAGE: Final = {BEST: pb.STANDINGS_BY_BEST, NEWEST: pb.STANDINGS_BY_NEWEST}


def standings_by(by: int) -> str:
    """Returns StandingsRequest.by as ``LadderReads.standings`` takes it (an unknown
    value: the best)."""
    return STANDINGS_BY.get(by, BEST)


def league_message(league: League) -> pb.League:
    """Returns a league as its message."""
    return pb.League(
        name=league.name, boss=league.boss or "", bot=league.spec or "", sigmas=league.sigmas
    )


def move_message(move: Move) -> pb.LeagueMove:
    """Returns a bot's move between leagues as its message."""
    return pb.LeagueMove(
        name=move.name,
        at=move.at,
        from_league=move.from_league,
        to_league=move.to_league,
        why=move.why,
        match_id=move.match_id or "",
    )


def standings_response(
    finished: int,
    table: Sequence[Standing],
    by: str = BEST,
    leagues: Sequence[League] = (),
    moves: Sequence[Move] = (),
) -> pb.StandingsResponse:
    """Returns the reply to Ladder.Standings (``table`` best first, each bot by its
    ``by`` version), each line as :func:`server.ladder.standings.lines` computes it,
    with the ladder's leagues and their latest moves (none when leagues are off)."""
    return pb.StandingsResponse(
        matches_finished=finished,
        by=BY_MESSAGE[by],
        standings=[
            standing_message(line.standing, line.low, line.high, line.p_better)
            for line in standings.lines(table)
        ],
        leagues=[league_message(league) for league in leagues],
        moves=[move_message(move) for move in moves],
    )


def standings_page(
    reply: pb.StandingsResponse, after: Key | None, size: int, players: int
) -> pb.StandingsResponse:
    """Returns the page of the Standings ``reply`` (every line, best first) that
    starts after the line ``after`` names (its rating and name; None: the first
    page), at most ``size`` lines, with the next page's token."""
    lines = reply.standings
    start = 0
    if after is not None:
        rating, name = float(after[0]), str(after[1])
        # The lines are in (-rating, name) order: the first past the cursor.
        start = bisect.bisect_right([(-line.rating, line.name) for line in lines], (-rating, name))
    shown = lines[start : start + size]
    more = start + size < len(lines)
    return pb.StandingsResponse(
        matches_finished=reply.matches_finished,
        by=reply.by,
        standings=shown,
        leagues=reply.leagues,
        moves=reply.moves,
        next_page_token=token_of(STANDINGS, (shown[-1].rating, shown[-1].name), str(players))
        if more and shown
        else "",
    )


def matches_response(rows: Sequence[LadderMatch], next_token: str = "") -> pb.MatchesResponse:
    """Returns the reply to Ladder.Matches: a page of ``rows``, then the next page's
    token."""
    return pb.MatchesResponse(matches=[ladder_summary(m) for m in rows], next_page_token=next_token)


def results_response(rows: Sequence[ResultRow], next_token: str = "") -> pb.ResultsResponse:
    """Returns the reply to Ladder.Results: a page of ``rows``, then the next page's
    token."""
    return pb.ResultsResponse(matches=[ladder_result(r) for r in rows], next_page_token=next_token)


def ladder_result(r: ResultRow) -> pb.LadderResult:
    """Returns an ended ladder match and its seats (times in UNIX seconds) as sent."""
    msg = pb.LadderResult(
        match_id=r.match_id,
        status=STATUSES[r.status],
        players=r.players,
        finish_order=r.finish_order or 0,
        rated=r.rated,
        commitment=r.commitment,
        void_reason=r.void_reason or "",
    )
    msg.created.FromNanoseconds(int(r.created * 1e9))
    if r.ended is not None:
        msg.ended.FromNanoseconds(int(r.ended * 1e9))
    if r.set_id is not None:
        msg.deal_set.CopyFrom(deal_set_message(r.set_id, r.set_index, r.players))
    for s in r.seats:
        seat = msg.seats.add(
            seat=s.seat, name=s.name, rank=s.rank or 0, position=s.position or 0, version=s.version
        )
        if s.delivered is not None:
            seat.delivered = s.delivered
    return msg


def ladder_summary(m: LadderMatch) -> pb.MatchSummary:
    """Returns a ladder match (``created`` in UNIX seconds) as a listing entry."""
    created = Timestamp()
    created.FromNanoseconds(int(m.created * 1e9))
    msg = pb.MatchSummary(
        match_id=m.match_id,
        status=STATUSES[m.status],
        players=m.players,
        names=m.names,
        winners=m.winners,
        created=created,
        ladder=True,
        commitment=m.commitment,
        voided=m.void_reason is not None,
        void_reason=m.void_reason or "",
        voided_by=m.voided_by,
    )
    if m.set_id is not None:
        msg.deal_set.CopyFrom(deal_set_message(m.set_id, m.set_index, m.players))
    return msg


def bot_stats_response(
    name: str,
    tallies: dict[int, Tally],
    positions: Sequence[PositionTally],
    suspension: Suspension | None = None,
    versions: Sequence[VersionLine] = (),
) -> pb.BotStatsResponse:
    """Returns the reply to Ladder.BotStats: the tallies by scope (all matches first),
    the positions by player count and position, the bot's suspension, if any, and
    its rated versions."""
    msg = pb.BotStatsResponse(
        name=name,
        tallies=[
            pb.BotTally(players=p, games=t.games, wins=t.wins, delivered=t.delivered)
            for p, t in sorted(tallies.items())
        ],
        positions=[
            pb.SeatPositionTally(
                players=p.players,
                position=p.position,
                games=p.games,
                wins=p.wins,
                mean_rank=p.mean_rank,
            )
            for p in positions
        ],
    )
    for v in versions:
        low, high = interval(Rating(v.mu, v.sigma))
        line = msg.versions.add(
            version=v.version,
            rating=Rating(v.mu, v.sigma).conservative,
            mu=v.mu,
            sigma=v.sigma,
            low=low,
            high=high,
            games=v.games,
            wins=v.wins,
        )
        if v.first_played is not None:
            line.first_played.FromNanoseconds(int(v.first_played * 1e9))
        if v.last_played is not None:
            line.last_played.FromNanoseconds(int(v.last_played * 1e9))
    if suspension is not None:
        msg.suspended = suspension.reason
        msg.suspended_by = suspension.by
        msg.suspended_at.FromNanoseconds(int(suspension.at * 1e9))
    return msg


#: The sequential test's decisions on the wire.
DECISIONS: Final[dict[str | None, pb.SprtDecision.ValueType]] = {
    None: pb.SPRT_DECISION_UNSPECIFIED,
    "better": pb.SPRT_DECISION_BETTER,
    "not better": pb.SPRT_DECISION_NOT_BETTER,
}


def challenge_of(request: pb.ChallengeRequest) -> Challenge:
    """Returns the scrimmage a Challenge asks for (zeros left for the defaults);
    raises ScrimmageError for a test whose hypotheses or error rates cannot be."""
    test = None
    if request.HasField("sprt"):
        asked, default = request.sprt, Sprt()
        try:
            test = Sprt(
                asked.elo0,
                asked.elo1 or default.elo1,
                asked.alpha or default.alpha,
                asked.beta or default.beta,
            )
        except ValueError as e:
            raise ScrimmageError(f"sprt: {e}") from None
    return Challenge(
        request.name,
        request.version,
        tuple(request.opponents),
        request.players,
        request.matches,
        request.duplicate,
        test,
    )


def scrimmage_report(report: Report) -> pb.ScrimmageReport:
    """Returns a scrimmage's report as a message."""
    msg = pb.ScrimmageReport(
        scrimmage_id=report.scrimmage_id,
        played=report.played,
        planned=report.planned,
        done=report.done,
        stopped=report.stopped,
    )
    for line in report.lines:
        msg.lines.add(
            name=line.name,
            version=line.version,
            games=line.games,
            wins=line.wins,
            win_rate=line.win_rate,
            low=line.low,
            high=line.high,
            mean_rank=line.mean_rank,
            mean_delivered=line.mean_delivered,
        )
    for match in report.matches:
        msg.matches.add(
            match_id=match.match_id,
            names=match.names,
            status=STATUSES[match.status],
            ranks=match.ranks,
        )
    test = report.test
    if test is not None:
        lower, upper = test.sprt.bounds
        msg.test.CopyFrom(
            pb.ScrimmageTest(
                sprt=pb.ScrimmageSprt(
                    elo0=test.sprt.elo0,
                    elo1=test.sprt.elo1,
                    alpha=test.sprt.alpha,
                    beta=test.sprt.beta,
                ),
                llr=test.llr,
                lower=lower,
                upper=upper,
                decision=DECISIONS[test.decision],
                pairs=test.pairs,
                pentanomial=test.pentanomial,
            )
        )
    return msg


def scrimmages_response(
    kept: Sequence[StoredScrimmage], next_token: str = ""
) -> pb.ScrimmagesResponse:
    """Returns a page of kept scrimmages as a message, each with its last report."""
    msg = pb.ScrimmagesResponse(next_page_token=next_token)
    for k in kept:
        row = k.row
        created = Timestamp()
        created.FromNanoseconds(int(row.created * 1e9))
        summary = msg.scrimmages.add(
            name=row.name,
            version=row.version,
            opponents=row.opponents,
            players=row.players,
            duplicate=row.duplicate,
            created=created,
        )
        if k.ended is not None:
            summary.ended.FromNanoseconds(int(k.ended * 1e9))
        summary.report.CopyFrom(scrimmage_report(stored_report(k)))
    return msg
