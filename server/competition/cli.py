"""``mammamia competition status|advance|release``: a running competition, from
the command line (docs/competitions.md).

Kept light: grpc is imported inside the handlers, so ``mammamia --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from ..cli_common import add_call_flags, call, guarded
from .config import PHASES


def register_competition(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``mammamia competition status|advance|release``."""
    p = sub.add_parser(
        "competition",
        help="a competition's phase and results; advance it, release its results",
        description="Read a running competition's phase, schedule and finals, move it "
        "to its next phase, or release its results (organiser: the key from "
        "--organiser-key, --organiser-key-file or MAMMAMIA_ORGANISER_KEY).",
    )
    cmds = p.add_subparsers(dest="competition_command", metavar="SUBCOMMAND", required=True)

    def common(q: argparse.ArgumentParser, *, organiser: bool) -> None:
        add_call_flags(q, "" if organiser else "; with it, results not yet released show too")
        q.add_argument("--json", action="store_true", help="print the status as JSON")

    s = cmds.add_parser(
        "status",
        help="print the phase, the schedule, the finals' progress and released results",
    )
    common(s, organiser=False)
    s.set_defaults(func=_status)
    a = cmds.add_parser(
        "advance",
        help="move the competition to its next phase (or --to a later one), stamped",
    )
    common(a, organiser=True)
    a.add_argument("--reason", required=True, help="why (stamped with the change)")
    a.add_argument("--to", choices=PHASES, help="the phase to move to (default: the next)")
    a.set_defaults(func=_advance)
    r = cmds.add_parser("release", help="release the finals' results to everyone")
    common(r, organiser=True)
    r.set_defaults(func=_release)
    e = cmds.add_parser(
        "export",
        help="write a competition's results as a bundle that `mammamia verify` checks",
        description="Write the competition's results from its database as a bundle "
        "directory: a manifest (the competition file, every phase stamp, the field, "
        "every finals match with its commitment, the final table, every file's hash) "
        "and every finals record (docs/competitions.md). Prints the manifest's path.",
    )
    e.add_argument(
        "--db",
        default=os.environ.get("MAMMAMIA_DB", "mammamia.db"),
        metavar="PATH|URL",
        help="the server's database: an SQLite file or a postgresql:// URL "
        "(MAMMAMIA_DB, default mammamia.db)",
    )
    e.add_argument("--name", help="the competition (default: the database's only one)")
    e.add_argument("out", metavar="BUNDLE", help="the directory to write (new, or empty)")
    e.set_defaults(func=_export)


def _call(args: argparse.Namespace, method: str, request: Any, *, organiser: bool) -> Any:
    from mammamia_pb import arena_pb2_grpc as pb_grpc

    return call(args, pb_grpc.CompetitionStub, method, request, key_required=organiser)


_guard = guarded(lambda args: f"mammamia competition {args.competition_command}")


def _when(at: float | None) -> str:
    if at is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def _show(data: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(data))
        return
    print(f"{data['name']}: {data['phase']} ({data['played']} of {data['planned']} finals matches)")
    for s in data["schedule"]:
        print(f"  {s['phase']:<13} scheduled {_when(s['starts'])}")
    for s in data["stamps"]:
        print(f"  -> {s['phase']:<10} {_when(s['at'])}  by {s['who']}: {s['reason']}")
    if data["field"]:
        print(f"  field: {', '.join(data['field'])}")
    if data["held"]:
        print("  results held until the organiser releases them")
    if data["final_reason"]:
        print(f"  final table ({data['final_reason']}):")
    elif data["standings"]:
        print("  finals standings so far:")
    for line in data["standings"]:
        print(
            f"  {line['rank']:>3}. {line['name']:<24} {line['mu']:7.2f} ± {2 * line['sigma']:5.2f}"
            f"  p>next {line['p_above_next']:.3f}  {line['matches']} matches"
            f", {line['wins']} won, {line['absent']} absent"
            f"  sets against next {line['sets_won_against_next']}-"
            f"{line['sets_lost_against_next']} (evidence {line['evidence_above_next']:.3g})"
        )


@_guard
def _status(args: argparse.Namespace) -> int:
    from .cli_wire import status_data, status_request

    reply = _call(args, "Status", status_request(), organiser=False)
    _show(status_data(reply), args.json)
    return 0


@_guard
def _advance(args: argparse.Namespace) -> int:
    from .cli_wire import advance_request, status_data

    reply = _call(args, "Advance", advance_request(args.reason, args.to), organiser=True)
    _show(status_data(reply), args.json)
    return 0


@_guard
def _release(args: argparse.Namespace) -> int:
    from .cli_wire import release_request, status_data

    reply = _call(args, "Release", release_request(), organiser=True)
    _show(status_data(reply), args.json)
    return 0


def _export(args: argparse.Namespace) -> int:
    from ..db.connection import ERRORS, StorageError
    from ..db.schema import SchemaError
    from .export import ExportError, export

    try:
        manifest = export(args.db, args.out, args.name)
    except (ExportError, ValueError, OSError, SchemaError, StorageError) as e:
        print(f"mammamia competition export: {e}", file=sys.stderr)
        return 2
    except ERRORS as e:  # the database cannot be reached
        print(f"mammamia competition export: {e}", file=sys.stderr)
        return 2
    print(manifest)
    return 0
