"""``mammamia admin suspend|reinstate|void|abort|quota``: the Admin service's
discipline calls from the command line (docs/operating.md, "Discipline").

Each prints one line saying what the call did (or one JSON object with ``--json``)
and exits 0; a refusal is printed on stderr and exits as every ``mammamia admin``
command does. Kept light: grpc and the messages are imported inside the handlers.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..cli_common import add_call_flags, call, guarded

#: What ``--matches`` and ``--entries`` take to mean the server's default.
DEFAULT = "default"


def register_discipline(cmds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``suspend``, ``reinstate``, ``void``, ``abort`` and ``quota`` to
    ``mammamia admin``."""
    s = cmds.add_parser(
        "suspend",
        help="suspend a ladder bot: it cannot enter, is never seated, shows as suspended",
        description="Suspend a ladder bot: its Enter is refused with the reason, an "
        "entry it has open ends, and it is never seated; the standings and its page say "
        "so. Its running match is finished by the default policy, or aborted (--abort).",
    )
    s.add_argument("name", metavar="NAME", help="the bot's name")
    s.add_argument(
        "--abort",
        action="store_true",
        help="abort its running match (default: the default policy plays its seat to the end)",
    )
    r = cmds.add_parser(
        "reinstate",
        help="lift a bot's suspension (also a quarantine)",
        description="Lift a ladder bot's suspension, also the server's quarantine: "
        "it may enter again.",
    )
    r.add_argument("name", metavar="NAME", help="the bot's name")
    v = cmds.add_parser(
        "void",
        help="void a finished ladder match: it leaves the ratings and tallies",
        description="Void a finished ladder match: the ratings, tallies and counts "
        "are replayed without it (as `mammamia ladder rerate` computes them); it stays "
        "listed, marked voided.",
    )
    v.add_argument("match_id", metavar="MATCH", help="the match's id")
    a = cmds.add_parser(
        "abort",
        help="abort a running match (ladder or organiser's): it never counts",
        description="Abort a running match, a ladder match or an organiser's: it ends "
        "as aborted and never counts. On many hosts, the host that runs it aborts it "
        "within a second.",
    )
    a.add_argument("match_id", metavar="MATCH", help="the match's id")
    q = cmds.add_parser(
        "quota",
        help="set a ladder bot's quotas (matches and entries per hour)",
        description="Set a ladder bot's own quotas in place of the server's defaults "
        "(serve --ladder-quota-matches, --ladder-quota-entries): N a number (0: no "
        f"quota) or '{DEFAULT}' (the server's default). A quota not given is set to "
        "the default.",
    )
    q.add_argument("name", metavar="NAME", help="the bot's name")
    q.add_argument(
        "--matches", type=_quota, default=None, metavar="N|default", help="matches an hour"
    )
    q.add_argument(
        "--entries", type=_quota, default=None, metavar="N|default", help="Enter calls an hour"
    )
    for parser, method in (
        (s, "SuspendBot"),
        (r, "ReinstateBot"),
        (v, "VoidMatch"),
        (a, "AbortMatch"),
        (q, "SetQuota"),
    ):
        add_call_flags(parser)
        parser.add_argument("--reason", required=True, help="why (on the audit log)")
        parser.add_argument("--json", action="store_true", help="print the reply as JSON")
        parser.set_defaults(func=_discipline, method=method)


def _quota(text: str) -> int | None:
    if text.strip().lower() == DEFAULT:
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2**31:
        raise argparse.ArgumentTypeError(f"need a number of 0 or more, or '{DEFAULT}'")
    return value


def _request(args: argparse.Namespace) -> Any:
    from . import cli_wire

    if args.method == "SuspendBot":
        return cli_wire.suspend_request(args.name, args.reason, args.abort)
    if args.method == "ReinstateBot":
        return cli_wire.bot_change_request(args.name, args.reason)
    if args.method == "SetQuota":
        return cli_wire.quota_request(args.name, args.reason, args.matches, args.entries)
    return cli_wire.match_change_request(args.match_id, args.reason)


def _said(args: argparse.Namespace, reply: Any) -> tuple[dict[str, Any], str]:
    """Returns the reply as JSON-ready data and as the line the command prints."""
    from . import cli_wire

    if args.method == "SetQuota":
        data = {"name": args.name, **cli_wire.quota_data(reply)}

        def shown(own: int | None, default: int) -> str:
            value = default if own is None else own
            return ("no quota" if value == 0 else f"{value} an hour") + (
                " (the server's default)" if own is None else ""
            )

        return data, (
            f"{args.name}: matches "
            f"{shown(data['matches_per_hour'], data['default_matches_per_hour'])}, entries "
            f"{shown(data['entries_per_hour'], data['default_entries_per_hour'])}"
        )
    data = cli_wire.discipline_data(reply)
    target = getattr(args, "name", None) or args.match_id
    changed = data["changed"]
    line = {
        "SuspendBot": f"{target} suspended"
        if changed
        else f"{target} was suspended already; its reason is now yours",
        "ReinstateBot": f"{target} reinstated" if changed else f"{target} was not suspended",
        "VoidMatch": f"match {target} voided: the ratings were replayed without it"
        if changed
        else f"match {target} was voided already",
        "AbortMatch": f"match {target} aborted",
    }[args.method]
    if args.method == "SuspendBot" and data["match_id"]:
        line += (
            f"; its match {data['match_id']} was aborted"
            if data["aborted"]
            else f"; the default policy plays its seat in match {data['match_id']}"
        )
        if data["host_address"]:
            line += f" by the host at {data['host_address']}, which runs it"
    elif args.method == "AbortMatch" and data["host_address"]:
        line += f" by the host at {data['host_address']}, which runs it"
    return data, line


@guarded(lambda args: f"mammamia admin {args.admin_command}")
def _discipline(args: argparse.Namespace) -> int:
    from mammamia_pb import admin_pb2_grpc as apb_grpc

    reply = call(args, apb_grpc.AdminStub, args.method, _request(args))
    data, line = _said(args, reply)
    print(json.dumps(data) if args.json else f"{line} (as {data['operator']})")
    return 0
