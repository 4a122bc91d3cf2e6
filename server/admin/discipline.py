"""The Admin service's discipline calls: SuspendBot, ReinstateBot, VoidMatch,
AbortMatch and SetQuota, thin methods over the ladder's discipline
(``server.ladder.discipline``).

Each is made as a named operator with a required reason (``AdminServicer.changed_by``)
and audited: a change to the ladder's tables commits with its audit row; an abort is
appended to the trail once the match is cut off.

Statuses: NOT_FOUND for a bot not registered, a match that is not a ladder match
(VoidMatch) or not running (AbortMatch); FAILED_PRECONDITION for a match that
cannot be voided (not finished);
INVALID_ARGUMENT for a missing reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import grpc

from mammamia_pb import admin_pb2 as apb

from ..db.ladder.rows import LadderError
from ..ladder.discipline import NotFoundError, NotVoidableError
from ..services import Context, abort
from . import wire

if TYPE_CHECKING:
    from ..audit import Audit
    from ..ladder.discipline import Discipline
    from .switches import Switches


class DisciplineCalls:
    """The discipline calls of :class:`server.admin.service.AdminServicer`."""

    audit: Audit
    switches: Switches

    async def changed_by(self, context: Context, reason: str, call: str) -> tuple[str, str]:
        raise NotImplementedError

    @property
    def _discipline(self) -> Discipline:
        return self.switches.ladder.discipline

    async def SuspendBot(
        self, request: apb.SuspendBotRequest, context: Context
    ) -> apb.DisciplineResponse:
        who, reason = await self.changed_by(context, request.reason, "SuspendBot")
        try:
            done = await self._discipline.suspend(
                request.name, reason, who, abort=wire.aborts_running(request)
            )
        except LadderError as e:
            await _refuse(context, e)
        return wire.discipline_response(who, done.new, done.match_id, done.aborted, done.elsewhere)

    async def ReinstateBot(
        self, request: apb.BotChangeRequest, context: Context
    ) -> apb.DisciplineResponse:
        who, reason = await self.changed_by(context, request.reason, "ReinstateBot")
        try:
            was = await self._discipline.reinstate(request.name, reason, who)
        except LadderError as e:
            await _refuse(context, e)
        return wire.discipline_response(who, was)

    async def VoidMatch(
        self, request: apb.MatchChangeRequest, context: Context
    ) -> apb.DisciplineResponse:
        who, reason = await self.changed_by(context, request.reason, "VoidMatch")
        try:
            new = await self._discipline.void(request.match_id, reason, who)
        except LadderError as e:
            await _refuse(context, e)
        return wire.discipline_response(who, new, request.match_id)

    async def AbortMatch(
        self, request: apb.MatchChangeRequest, context: Context
    ) -> apb.DisciplineResponse:
        who, reason = await self.changed_by(context, request.reason, "AbortMatch")
        try:
            elsewhere = await self._discipline.abort(request.match_id, reason, who)
        except LadderError as e:
            await _refuse(context, e)
        await self.audit.record(
            who, "match.abort", request.match_id, reason, {"host": elsewhere} if elsewhere else None
        )
        return wire.discipline_response(who, True, request.match_id, True, elsewhere)

    async def SetQuota(self, request: apb.SetQuotaRequest, context: Context) -> apb.QuotaResponse:
        who, reason = await self.changed_by(context, request.reason, "SetQuota")
        quotas = wire.quotas_asked(request)
        discipline = self._discipline
        try:
            await discipline.set_quota(request.name, *quotas, reason, who)
        except LadderError as e:
            await _refuse(context, e)
        bounds = discipline.bounds
        return wire.quota_response(who, quotas, (bounds.matches_per_hour, bounds.entries_per_hour))


async def _refuse(context: Context, e: LadderError) -> NoReturn:
    """Ends the call with the status that ``e`` stands for."""
    if isinstance(e, NotFoundError):
        await abort(context, grpc.StatusCode.NOT_FOUND, str(e))
    if isinstance(e, NotVoidableError):
        await abort(context, grpc.StatusCode.FAILED_PRECONDITION, str(e))
    await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
