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
