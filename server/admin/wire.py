"""The Admin service's messages (``mammamia_pb.admin_pb2``), built and read here."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from mammamia_pb import admin_pb2 as apb

from ..db.admin import AuditRow, SwitchRow


def switches_response(switches: Mapping[str, SwitchRow], operator: str) -> apb.SwitchesResponse:
    """Returns every switch, and the operator the call was made as."""
    return apb.SwitchesResponse(
        switches=[
            apb.Switch(name=s.name, on=s.on, operator=s.operator, reason=s.reason, at=s.at)
            for s in switches.values()
        ],
        operator=operator,
    )


def audit_response(rows: Sequence[AuditRow], next_page_token: str) -> apb.ListAuditResponse:
    """Returns a page of the audit trail."""
    return apb.ListAuditResponse(
        entries=[
            apb.AuditEntry(
                seq=r.seq,
                at=r.at,
                operator=r.operator,
                action=r.action,
                target=r.target,
                reason=r.reason,
                details_json=json.dumps(r.detail, sort_keys=True),
            )
            for r in rows
        ],
        next_page_token=next_page_token,
    )


# Discipline (server.admin.discipline)


def aborts_running(request: apb.SuspendBotRequest) -> bool:
    """Returns whether a suspension aborts the bot's running match (else the default
    policy plays its seat)."""
    return request.running == apb.RUNNING_MATCH_ABORT


def quotas_asked(request: apb.SetQuotaRequest) -> tuple[int | None, int | None]:
    """Returns the (matches, entries) an hour a SetQuota asks for; None: the default."""
    return (
        request.matches_per_hour if request.HasField("matches_per_hour") else None,
        request.entries_per_hour if request.HasField("entries_per_hour") else None,
    )


def discipline_response(
    operator: str,
    changed: bool,
    match_id: str | None = None,
    aborted: bool = False,
    elsewhere: str = "",
) -> apb.DisciplineResponse:
    """Returns what a discipline call did (``elsewhere``: the host that runs the
    suspended bot's match, when another)."""
    return apb.DisciplineResponse(
        operator=operator,
        changed=changed,
        match_id=match_id or "",
        aborted=aborted,
        host_address=elsewhere,
    )


def quota_response(
    operator: str,
    quotas: tuple[int | None, int | None],
    defaults: tuple[int, int],
) -> apb.QuotaResponse:
    """Returns a bot's quotas (matches, entries an hour; None: the default) and the
    server's defaults."""
    reply = apb.QuotaResponse(
        operator=operator,
        default_matches_per_hour=defaults[0],
        default_entries_per_hour=defaults[1],
    )
    if quotas[0] is not None:
        reply.matches_per_hour = quotas[0]
    if quotas[1] is not None:
        reply.entries_per_hour = quotas[1]
    return reply
