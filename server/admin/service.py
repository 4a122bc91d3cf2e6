"""The Admin gRPC servicer (``mammamia.v1.Admin``): thin methods over the server's
switches (``server.admin.switches``) and its audit trail (``server.audit``).

Every call is made as the operator its ``organiser-key`` metadata names
(``server.services.checked_operator``): UNAUTHENTICATED without one,
PERMISSION_DENIED for a key that names none. A change without a reason, or with one
over 500 characters, is refused with INVALID_ARGUMENT and changes nothing; every
change is appended to the audit trail with its operator and reason.
"""

from __future__ import annotations

from typing import Final

import grpc

from mammamia_pb import admin_pb2 as apb
from mammamia_pb import admin_pb2_grpc as apb_grpc

from ..audit import Audit, ReasonError, reason_of
from ..db.admin import LADDER_PAUSED, REGISTRATION_CLOSED, AuditRow
from ..operators import Operators
from ..paging import BadPageToken, key_of, page_of, page_size
from ..services import Context, abort, checked_operator
from . import wire
from .discipline import DisciplineCalls
from .switches import Switches

#: The switch each change call turns, on or off, and the action it is audited as.
TURNS: Final = {
    "PauseLadder": (LADDER_PAUSED, True, "ladder.pause"),
    "ResumeLadder": (LADDER_PAUSED, False, "ladder.resume"),
    "CloseRegistration": (REGISTRATION_CLOSED, True, "registration.close"),
    "OpenRegistration": (REGISTRATION_CLOSED, False, "registration.open"),
}
#: The audit trail's listing among the page tokens (``server.paging``).
AUDIT_LISTING: Final = "audit"


def _place(row: AuditRow) -> tuple[int]:
    return (row.seq,)


class AdminServicer(DisciplineCalls, apb_grpc.AdminServicer):
    """The Admin service over one host's switches and the audit trail; its
    discipline calls are ``server.admin.discipline``'s."""

    def __init__(self, operators: Operators, audit: Audit, switches: Switches) -> None:
        self.operators = operators
        self.audit = audit
        self.switches = switches

    async def changed_by(self, context: Context, reason: str, call: str) -> tuple[str, str]:
        """Returns (operator, reason) of a change call; aborts it for a key that
        names no operator, or a missing or overlong reason."""
        who = await checked_operator(context, self.operators)
        try:
            return who, reason_of(reason, call)
        except ReasonError as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))

    async def _turn(
        self, call: str, request: apb.SwitchRequest, context: Context
    ) -> apb.SwitchesResponse:
        who, reason = await self.changed_by(context, request.reason, call)
        name, on, action = TURNS[call]
        _, switches = await self.switches.turn(name, on, who, reason, action)
        return wire.switches_response(switches, who)

    async def PauseLadder(
        self, request: apb.SwitchRequest, context: Context
    ) -> apb.SwitchesResponse:
        return await self._turn("PauseLadder", request, context)

    async def ResumeLadder(
        self, request: apb.SwitchRequest, context: Context
    ) -> apb.SwitchesResponse:
        return await self._turn("ResumeLadder", request, context)

    async def CloseRegistration(
        self, request: apb.SwitchRequest, context: Context
    ) -> apb.SwitchesResponse:
        return await self._turn("CloseRegistration", request, context)

    async def OpenRegistration(
        self, request: apb.SwitchRequest, context: Context
    ) -> apb.SwitchesResponse:
        return await self._turn("OpenRegistration", request, context)

    async def GetSwitches(
        self, request: apb.GetSwitchesRequest, context: Context
    ) -> apb.SwitchesResponse:
        who = await checked_operator(context, self.operators)
        return wire.switches_response(await self.audit.switches(), who)

    async def ListAudit(
        self, request: apb.ListAuditRequest, context: Context
    ) -> apb.ListAuditResponse:
        await checked_operator(context, self.operators)
        try:
            after = key_of(request.page_token, AUDIT_LISTING, (int,))
        except BadPageToken as e:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        size = page_size(request.limit)
        # One more than the page: whether a next page exists is known without a call.
        rows = await self.audit.entries(0 if after is None else int(after[0]), size + 1)
        page = page_of(rows, size, AUDIT_LISTING, _place)
        return wire.audit_response(page.items, page.next_token)
