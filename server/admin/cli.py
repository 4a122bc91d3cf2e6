"""``mammamia admin``: operating a running server from the command line
(docs/operating.md): pause and resume the ladder, close and open registration,
read the switches and the audit trail, and add operators to an operators file.

Every call is made as the operator whose key is given (``server.cli_common``).
Kept light: grpc is imported inside the handlers, so ``mammamia --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from ..cli_common import EXIT_REFUSED, add_call_flags, call, guarded
from ..options import env
from .cli_discipline import register_discipline

#: The change commands: (command, the Admin call, what it does).
CHANGES = (
    ("pause", "PauseLadder", "pause the ladder: running matches finish, no new one forms"),
    ("resume", "ResumeLadder", "resume a paused ladder"),
    ("close-registration", "CloseRegistration", "refuse new names (Ladder.Register)"),
    ("open-registration", "OpenRegistration", "accept new names again"),
)
PAGE = 100


def register_admin(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``mammamia admin pause|resume|close-registration|open-registration|
    status|log`` and ``mammamia admin operators add``."""
    p = sub.add_parser(
        "admin",
        help="operate a running server: pause the ladder, close registration, the audit log",
        description="Operate a running server as a named operator (the key from "
        "--organiser-key or --operator-key, --organiser-key-file, or "
        "MAMMAMIA_ORGANISER_KEY): pause and resume the ladder, close and open "
        "registration, read the switches and the audit log. Every change needs "
        "--reason and is appended to the audit log (docs/operating.md).",
    )
    cmds = p.add_subparsers(dest="admin_command", metavar="SUBCOMMAND", required=True)
    for name, method, text in CHANGES:
        q = cmds.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        add_call_flags(q)
        q.add_argument("--reason", required=True, help="why (on the audit log; told to bots)")
        q.add_argument("--json", action="store_true", help="print the switches as JSON")
        q.set_defaults(func=_change, method=method)
    register_discipline(cmds)
    s = cmds.add_parser("status", help="print the server's switches and who turned them")
    add_call_flags(s)
    s.add_argument("--json", action="store_true", help="print the switches as JSON")
    s.set_defaults(func=_status)
    log = cmds.add_parser(
        "log",
        help="print the audit log, oldest first",
        description="Print every change operators made (and the server's own, as "
        "`server`), oldest first: when, who, what, on what, why. Read a page at a "
        "time; --page-token starts after the page whose token it is.",
    )
    add_call_flags(log)
    log.add_argument("--json", action="store_true", help="print one JSON object per entry")
    log.add_argument(
        "--page-size", type=_positive, default=PAGE, metavar="N", help=f"default {PAGE}"
    )
    log.add_argument("--page-token", default="", metavar="TOKEN", help="start after this page")
    log.set_defaults(func=_log)
    ops = cmds.add_parser("operators", help="the operators file of `mammamia serve --operators`")
    ocmds = ops.add_subparsers(dest="operators_command", metavar="ACTION", required=True)
    add = ocmds.add_parser(
        "add",
        help="add an operator to an operators file and print its key once",
        description="Add operator NAME to FILE (created when missing) and print its "
        "new key once: the file keeps only its hash. A running server reads the "
        "file when it starts (mammamia serve --operators FILE).",
    )
    add.add_argument("name", metavar="NAME", help="1 to 32 letters, digits, '-', '_' or '.'")
    add.add_argument(
        "--file",
        default=env("MAMMAMIA_OPERATORS"),
        required=env("MAMMAMIA_OPERATORS") is None,
        metavar="FILE",
        help="the operators file (MAMMAMIA_OPERATORS)",
    )
    add.set_defaults(func=_add_operator)


def _positive(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError("need 1 to 1000")
    return value


def _call(args: argparse.Namespace, method: str, request: Any) -> Any:
    from mammamia_pb import admin_pb2_grpc as apb_grpc

    return call(args, apb_grpc.AdminStub, method, request)


_guard = guarded(lambda args: f"mammamia admin {args.admin_command}")


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at)) if at else "-"


def _show(data: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(data))
        return
    for s in data["switches"]:
        state = "on " if s["on"] else "off"
        by = f"  {_when(s['at'])} by {s['operator']}: {s['reason']}" if s["operator"] else ""
        print(f"{s['name']:<20} {state}{by}")


@_guard
def _change(args: argparse.Namespace) -> int:
    from .cli_wire import switch_request, switches_data

    _show(switches_data(_call(args, args.method, switch_request(args.reason))), args.json)
    return 0


@_guard
def _status(args: argparse.Namespace) -> int:
    from .cli_wire import switches_data, switches_request

    _show(switches_data(_call(args, "GetSwitches", switches_request())), args.json)
    return 0


@_guard
def _log(args: argparse.Namespace) -> int:
    from .cli_wire import audit_data, audit_request

    token = args.page_token
    while True:
        entries, token = audit_data(_call(args, "ListAudit", audit_request(args.page_size, token)))
        for e in entries:
            if args.json:
                print(json.dumps(e))
            else:
                details = f"  {json.dumps(e['details'])}" if e["details"] else ""
                print(
                    f"{e['seq']:>6}  {_when(e['at'])}  {e['operator']:<12} {e['action']:<20}"
                    f" {e['target'] or '-'}: {e['reason'] or '-'}{details}"
                )
        if not token:
            return 0


def _add_operator(args: argparse.Namespace) -> int:
    from ..operators import OperatorsError, add

    try:
        key = add(args.file, args.name)
    except OperatorsError as e:
        print(f"mammamia admin operators add: {e}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"operator {args.name} key: {key}")
    print(
        "(shown once: the file keeps only its hash; restart the server to read the file)",
        file=sys.stderr,
    )
    return 0
