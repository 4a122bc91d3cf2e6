"""The Ladder gRPC servicer: thin methods over :class:`~server.ladder.ladder.Ladder`.

The ladder's messages (Assignment, Standing, MatchSummary) are built by
``server.ladder.wire``; the game itself never passes through here (seats are played with
the Seat service, records are stored text).

Status codes: INVALID_ARGUMENT for a bad name or player count; ALREADY_EXISTS for
a taken name, and to end an entry that a newer entry of the same bot took over;
RESOURCE_EXHAUSTED for a name registered while too many names never entered;
UNAUTHENTICATED without the ``bot-key`` metadata; PERMISSION_DENIED for an unknown
bot or a wrong key, and for a suspended bot (also to end the entry of a bot
suspended while entered; the message gives the reason); RESOURCE_EXHAUSTED for an
Enter past the bot's quota of entries an hour (the message names it); UNAVAILABLE
for an entry while the server shuts down; NOT_FOUND for a match that is not a
ladder match, or a bot that is not registered (BotStats); INVALID_ARGUMENT also
for a page token a list did not give (``server.paging``);
FAILED_PRECONDITION for a record asked for while its match runs, and for a
Register while registration is closed (an operator closed it, or a competition's
registration phase has ended: the message says which, and why). An Enter stream
also carries notices (an Assignment with no match: why the bot waits). Challenge
(a scrimmage, ``server.ladder.scrimmage``): INVALID_ARGUMENT for bad counts or
names, FAILED_PRECONDITION for bots not entered or suspended, RESOURCE_EXHAUSTED
past the name's limits. GetRecord serves a scrimmage match's record as a ladder
match's.

Standings, match lists and a match's row are read on the ladder's reader thread:
the event loop only awaits them. Standings change only when a result is rated, so
each scope's reply is read and built once after each rated result
(:meth:`Ladder.standings`) and served from memory until the next; on a database
that many hosts share (whose results other hosts rate too) they are read at each call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from ..db.connection import storable
from ..db.ladder import results
from ..db.ladder.rows import LadderError, LadderFullError, NameTakenError, Standing, player_of
from ..db.ladder.scrimmages import ScrimmageLimitError
from ..paging import MAX_PAGE_SIZE, BadPageToken, key_of, page_size
from ..quoting import quoted
from ..services import abort, metadata
from ..status import MatchStatus
from ..visibility import owned_record
from . import scrimmage, wire
from .discipline import QuotaError, SuspendedError
from .ladder import Ladder, RegistrationClosedError, UnknownBotError
from .lobby import EndedError, Notice, ReplacedError
from .matches import LadderClosedError

DEFAULT_MATCHES = 20


class LadderServicer(pb_grpc.LadderServicer):
    """Register, Enter, Standings, Matches, GetRecord, BotStats, Challenge and
    Scrimmages over one Ladder."""

    def __init__(self, ladder: Ladder) -> None:
        self.ladder = ladder
        # The last Standings reply per scope, and the reading it was built from.
        self._standings: dict[
            tuple[int, str], tuple[tuple[int, list[Standing]], pb.StandingsResponse]
        ] = {}

    async def Register(
        self,
        request: pb.RegisterRequest,
        context: grpc.aio.ServicerContext[pb.RegisterRequest, pb.RegisterResponse],
    ) -> pb.RegisterResponse:
        try:
            key = await self.ladder.register(request.name)
        except RegistrationClosedError as e:
            await abort(context, grpc.StatusCode.FAILED_PRECONDITION, str(e))
        except NameTakenError as e:
            await abort(context, grpc.StatusCode.ALREADY_EXISTS, str(e))
        except LadderFullError as e:
            await abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, str(e))
        except LadderError as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        return wire.register_response(request.name, key)

    async def Enter(
        self,
        request: pb.EnterRequest,
        context: grpc.aio.ServicerContext[pb.EnterRequest, pb.Assignment],
    ) -> AsyncIterator[pb.Assignment]:
        key = metadata(context, "bot-key")
        if not key:
            await abort(
                context, grpc.StatusCode.UNAUTHENTICATED, "Ladder.Enter needs the bot-key metadata"
            )
        try:
            entrant = await self.ladder.enter(request.name, key, request.version)
        except (UnknownBotError, SuspendedError) as e:
            await abort(context, grpc.StatusCode.PERMISSION_DENIED, str(e))
        except QuotaError as e:
            await abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, str(e))
        except LadderClosedError as e:
            await abort(context, grpc.StatusCode.UNAVAILABLE, str(e))
        except LadderError as e:  # a bad version
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        try:
            # Headers now, the entry recorded: the bot knows it has entered (and that
            # a later entry replaces this one) before its first assignment.
            await context.send_initial_metadata(())
            async for item in entrant:
                if isinstance(item, Notice):
                    yield wire.notice_message(item.text)
                else:
                    yield wire.assignment_message(item)
        except ReplacedError as e:
            await abort(context, grpc.StatusCode.ALREADY_EXISTS, str(e))
        except EndedError as e:  # suspended while entered
            await abort(context, grpc.StatusCode.PERMISSION_DENIED, str(e))
        except LadderClosedError as e:
            await abort(context, grpc.StatusCode.UNAVAILABLE, str(e))
        finally:
            entrant.close()

    async def Standings(
        self,
        request: pb.StandingsRequest,
        context: grpc.aio.ServicerContext[pb.StandingsRequest, pb.StandingsResponse],
    ) -> pb.StandingsResponse:
        if request.players and not 2 <= request.players <= 5:
            await abort(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"players {request.players}: 0 (all) or 2 to 5 (R-SETUP-1)",
            )
        by = wire.standings_by(request.by)
        standings = await self.ladder.standings(request.players, by)
        known = self._standings.get((request.players, by))
        if known is None or known[0] is not standings:  # built once per reading
            # Leagues move only when a result is rated, as the standings do.
            leagues, moves = await self.ladder.reader.leagues()
            known = (standings, wire.standings_response(*standings, by, leagues, moves))
            self._standings[(request.players, by)] = known
        size = page_size(request.page_size, MAX_PAGE_SIZE)
        if not request.page_token and len(known[0][1]) <= size:
            return known[1]  # one page: the reply as built
        try:
            after = key_of(request.page_token, wire.STANDINGS, (float, str), str(request.players))
        except BadPageToken as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        return wire.standings_page(known[1], after, size, request.players)

    async def Matches(
        self,
        request: pb.MatchesRequest,
        context: grpc.aio.ServicerContext[pb.MatchesRequest, pb.MatchesResponse],
    ) -> pb.MatchesResponse:
        size = page_size(request.page_size or request.limit, DEFAULT_MATCHES, MAX_PAGE_SIZE)
        if not storable(request.name):
            return wire.matches_response([])  # a name no bot has
        try:
            page = await self.ladder.reader.matches_page(
                request.name or None, size, request.page_token, status=MatchStatus.FINISHED
            )
        except BadPageToken as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        return wire.matches_response(page.items, page.next_token)

    async def Results(
        self,
        request: pb.ResultsRequest,
        context: grpc.aio.ServicerContext[pb.ResultsRequest, pb.ResultsResponse],
    ) -> pb.ResultsResponse:
        try:
            page = await results.read_page(
                self.ladder.reader, page_size(request.page_size), request.page_token
            )
        except BadPageToken as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        return wire.results_response(page.items, page.next_token)

    async def GetRecord(
        self,
        request: pb.GetRecordRequest,
        context: grpc.aio.ServicerContext[pb.GetRecordRequest, pb.GameRecord],
    ) -> pb.GameRecord:
        match = (
            await self.ladder.reader.match(request.match_id) if storable(request.match_id) else None
        )
        kept = (
            self.ladder.store.scrimmage_match(request.match_id)
            if match is None and storable(request.match_id)
            else None
        )
        names = match.names if match is not None else kept.names if kept is not None else None
        if names is None:
            await abort(
                context,
                grpc.StatusCode.NOT_FOUND,
                f"match {quoted(request.match_id)} is not a ladder match",
            )
        if (match is not None and match.status == MatchStatus.RUNNING) or (
            kept is not None and kept.status == MatchStatus.RUNNING
        ):
            await abort(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"match {quoted(request.match_id)} is still running",
            )
        owner = await self._owner(request, context)
        record = self.ladder.matches.record(request.match_id)
        if record is None:
            await abort(
                context,
                grpc.StatusCode.NOT_FOUND,
                f"match {quoted(request.match_id)} has no stored record",
            )
        if owner is not None:
            # The bot's own notes, for its owner alone: only the seats it played (in
            # any of its versions: one key covers them all).
            seats = [seat for seat, label in enumerate(names) if player_of(label)[0] == owner]
            record = owned_record(record, self.ladder.matches.notes(request.match_id), seats)
        return wire.game_record(request.match_id, record)

    async def _owner(
        self,
        request: pb.GetRecordRequest,
        context: grpc.aio.ServicerContext[pb.GetRecordRequest, pb.GameRecord],
    ) -> str | None:
        """Returns the bot a GetRecord call proved it owns (its name and key), or None
        for a public call; aborts the call when the key is missing or wrong."""
        if not request.name:
            return None
        key = metadata(context, "bot-key")
        if not key:
            await abort(
                context,
                grpc.StatusCode.UNAUTHENTICATED,
                "Ladder.GetRecord with a name needs that bot's bot-key metadata",
            )
        if not storable(request.name) or not self.ladder.store.check_key(request.name, key):
            await abort(
                context,
                grpc.StatusCode.PERMISSION_DENIED,
                f"bot {quoted(request.name)} is not registered or the key is wrong",
            )
        return request.name

    async def Challenge(
        self,
        request: pb.ChallengeRequest,
        context: grpc.aio.ServicerContext[pb.ChallengeRequest, pb.ScrimmageReport],
    ) -> AsyncIterator[pb.ScrimmageReport]:
        key = metadata(context, "bot-key")
        if not key:
            await abort(
                context,
                grpc.StatusCode.UNAUTHENTICATED,
                "Ladder.Challenge needs the challenging bot's bot-key metadata",
            )
        try:
            played = await scrimmage.begin(self.ladder, key, wire.challenge_of(request))
        except (UnknownBotError, SuspendedError) as e:
            await abort(context, grpc.StatusCode.PERMISSION_DENIED, str(e))
        except scrimmage.ScrimmageError as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except scrimmage.NotReadyError as e:
            await abort(context, grpc.StatusCode.FAILED_PRECONDITION, str(e))
        except ScrimmageLimitError as e:
            await abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, str(e))
        reports = played.reports()
        try:
            async for report in reports:
                yield wire.scrimmage_report(report)
        finally:
            await reports.aclose()

    async def Scrimmages(
        self,
        request: pb.ScrimmagesRequest,
        context: grpc.aio.ServicerContext[pb.ScrimmagesRequest, pb.ScrimmagesResponse],
    ) -> pb.ScrimmagesResponse:
        size = page_size(request.page_size, scrimmage.DEFAULT_LISTED, scrimmage.MAX_LISTED)
        if not storable(request.name):
            return wire.scrimmages_response([])  # a name no bot has
        try:
            page = await self.ladder.reader.scrimmages_page(
                request.name or None, size, request.page_token
            )
        except BadPageToken as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        return wire.scrimmages_response(page.items, page.next_token)

    async def BotStats(
        self,
        request: pb.BotStatsRequest,
        context: grpc.aio.ServicerContext[pb.BotStatsRequest, pb.BotStatsResponse],
    ) -> pb.BotStatsResponse:
        if not storable(request.name) or not await self.ladder.reader.is_registered(request.name):
            await abort(
                context,
                grpc.StatusCode.NOT_FOUND,
                f"bot {quoted(request.name)} is not registered on this ladder",
            )
        tallies, positions, suspension = await self.ladder.reader.bot_stats(request.name)
        versions = await self.ladder.reader.versions(request.name)
        return wire.bot_stats_response(request.name, tallies, positions, suspension, versions)
