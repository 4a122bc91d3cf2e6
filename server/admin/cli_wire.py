"""The messages of ``mammamia admin``: the requests it sends to a server's Admin
service, and its replies as the JSON-ready data the command prints. Imports only
the generated messages, so that a command starts fast."""

from __future__ import annotations

import json
from typing import Any

from mammamia_pb import admin_pb2 as apb


def switch_request(reason: str) -> apb.SwitchRequest:
    """Returns the request that turns a switch for ``reason``."""
    return apb.SwitchRequest(reason=reason)


def switches_request() -> apb.GetSwitchesRequest:
    """Returns the request for the server's switches."""
    return apb.GetSwitchesRequest()


def audit_request(limit: int, page_token: str) -> apb.ListAuditRequest:
    """Returns the request for a page of at most ``limit`` audit entries after
    ``page_token`` (empty: from the start)."""
    return apb.ListAuditRequest(limit=limit, page_token=page_token)


def switches_data(msg: apb.SwitchesResponse) -> dict[str, Any]:
    """Returns the switches (and who the call was made as) as JSON-ready data."""
    return {
        "operator": msg.operator,
        "switches": [
            {"name": s.name, "on": s.on, "operator": s.operator, "reason": s.reason, "at": s.at}
            for s in msg.switches
        ],
    }


def audit_data(msg: apb.ListAuditResponse) -> tuple[list[dict[str, Any]], str]:
    """Returns a page's entries as JSON-ready data, and the next page's token."""
    return (
        [
            {
                "seq": e.seq,
                "at": e.at,
                "operator": e.operator,
                "action": e.action,
                "target": e.target,
                "reason": e.reason,
                "details": json.loads(e.details_json or "{}"),
            }
            for e in msg.entries
        ],
        msg.next_page_token,
    )
