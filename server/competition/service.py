"""The Competition gRPC servicer: thin methods over a
:class:`~server.competition.run.CompetitionRun` (messages: ``server.competition.wire``).

Status codes: UNAUTHENTICATED without the ``organiser-key`` metadata and
PERMISSION_DENIED for a key that names no operator (Advance, Release: each made as
the operator the key names, and appended to the audit trail); INVALID_ARGUMENT for an
Advance without a reason or to an unknown phase; FAILED_PRECONDITION for an Advance
to a phase that does not come after the current one, and a Release before the
finals have their final table, and for every call on a server that runs no
competition. Status with a wrong key is answered as to anyone.
"""

from __future__ import annotations

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from ..audit import Audit
from ..operators import Operators
from ..services import Context, abort, checked_operator, operator_of
from . import wire
from .run import CompetitionError, CompetitionRun
from .view import status

#: Longest reason stored with a phase change.
MAX_REASON = 500


class CompetitionServicer(pb_grpc.CompetitionServicer):
    """Status, Advance and Release over one CompetitionRun."""

    def __init__(self, run: CompetitionRun | None, operators: Operators, audit: Audit) -> None:
        self.run = run
        self.operators = operators
        self.audit = audit

    async def _running(self, context: Context) -> CompetitionRun:
        """Returns the server's competition; aborts when it runs none."""
        if self.run is None:
            await abort(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                "this server runs no competition (mammamia serve --competition FILE)",
            )
        return self.run

    def _organiser(self, context: Context) -> bool:
        return isinstance(operator_of(context, self.operators), str)

    async def Status(
        self, request: pb.CompetitionStatusRequest, context: Context
    ) -> pb.CompetitionStatusResponse:
        run = await self._running(context)
        return wire.status_response(await status(run, self._organiser(context)))

    async def Advance(
        self, request: pb.AdvanceRequest, context: Context
    ) -> pb.CompetitionStatusResponse:
        who = await checked_operator(context, self.operators)
        run = await self._running(context)
        reason = request.reason.strip()
        if not reason:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "Advance needs a reason")
        if len(reason) > MAX_REASON:
            await abort(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the reason has {len(reason)} characters; at most {MAX_REASON}",
            )
        to = wire.phase_of(request.to)
        if request.to and to is None:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, f"unknown phase {request.to}")
        try:
            stamp = await run.advance(reason, to, who)
        except CompetitionError as e:
            await abort(context, grpc.StatusCode.FAILED_PRECONDITION, str(e))
        await self.audit.record(
            who, "competition.advance", run.name, reason, {"phase": stamp.phase}
        )
        return wire.status_response(await status(run, True))

    async def Release(
        self, request: pb.ReleaseResultsRequest, context: Context
    ) -> pb.CompetitionStatusResponse:
        who = await checked_operator(context, self.operators)
        run = await self._running(context)
        try:
            released = await run.release(who)
        except CompetitionError as e:
            await abort(context, grpc.StatusCode.FAILED_PRECONDITION, str(e))
        if released:
            await self.audit.record(who, "competition.release", run.name)
        return wire.status_response(await status(run, True))
