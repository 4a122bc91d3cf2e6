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


# Discipline (server.admin.cli_discipline)


def suspend_request(name: str, reason: str, abort: bool) -> apb.SuspendBotRequest:
    """Returns the request that suspends ``name``, aborting its running match or not."""
    running = apb.RUNNING_MATCH_ABORT if abort else apb.RUNNING_MATCH_DEFAULT_POLICY
    return apb.SuspendBotRequest(name=name, reason=reason, running=running)


def bot_change_request(name: str, reason: str) -> apb.BotChangeRequest:
    """Returns the request of a change to the bot ``name`` (ReinstateBot)."""
    return apb.BotChangeRequest(name=name, reason=reason)


def match_change_request(match_id: str, reason: str) -> apb.MatchChangeRequest:
    """Returns the request of a change to a match (VoidMatch, AbortMatch)."""
    return apb.MatchChangeRequest(match_id=match_id, reason=reason)


def quota_request(
    name: str, reason: str, matches: int | None, entries: int | None
) -> apb.SetQuotaRequest:
    """Returns the request that sets the bot's quotas (None: the server's default)."""
    request = apb.SetQuotaRequest(name=name, reason=reason)
    if matches is not None:
        request.matches_per_hour = matches
    if entries is not None:
        request.entries_per_hour = entries
    return request


def discipline_data(msg: apb.DisciplineResponse) -> dict[str, Any]:
    """Returns what a discipline call did as JSON-ready data."""
    return {
        "operator": msg.operator,
        "changed": msg.changed,
        "match_id": msg.match_id or None,
        "aborted": msg.aborted,
        "host_address": msg.host_address or None,
    }


def quota_data(msg: apb.QuotaResponse) -> dict[str, Any]:
    """Returns a bot's quotas (None: the server's default) and the defaults."""
    return {
        "operator": msg.operator,
        "matches_per_hour": msg.matches_per_hour if msg.HasField("matches_per_hour") else None,
        "entries_per_hour": msg.entries_per_hour if msg.HasField("entries_per_hour") else None,
        "default_matches_per_hour": msg.default_matches_per_hour,
        "default_entries_per_hour": msg.default_entries_per_hour,
    }
