"""The ``mammamia conformance`` command.

Kept light (no gRPC import at module level) so that ``mammamia --help`` stays quick.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import textwrap

from .. import options

EXIT_FAILED = 1
EXIT_USAGE = 2
# The kit's scenario names, repeated here so that building the parser imports no gRPC;
# a test checks them against server.conformance.kit.SCENARIOS.
NAMES = (
    "turns",
    "end",
    "minimale",
    "monotoni",
    "add-from-hand",
    "bombastica",
    "decline",
    "resume",
    "refused",
    "deadline",
)
# The ladder scenarios (server.conformance.ladder.SCENARIOS), run with --ladder-client.
LADDER_NAMES = (
    "ladder-enter",
    "ladder-matches",
    "ladder-replaced",
    "ladder-host",
    "ladder-key",
    "ladder-drain",
)


def register_conformance(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds the ``conformance`` command."""
    p = sub.add_parser(
        "conformance",
        help="check that a bot client in any language plays by the contract",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Start a server in-process (127.0.0.1, a free port, a temporary "
            "database) and, for each scenario, create a two-player match, run the client "
            "command for one seat (the kit plays the other) and judge it. Prints one row per "
            "scenario (pass/FAIL and why), and the client's stderr tail for failures; "
            "progress goes to stderr. Exit 0 when every scenario passes, 1 when one fails, "
            "2 for bad usage.",
            80,
        ),
        epilog="scenarios:\n"
        "  turns          a whole match from the deal: every decision answered before its\n"
        "                 default, none refused, exit 0 once match_ended has come\n"
        "  end            the turns match's exit: code 0, within 5 s after match_ended,\n"
        "                 never before (every scenario requires it)\n"
        '  minimale       starts at a Minimale to resolve, "?" to choose among ties\n'
        '  monotoni       starts at a Monotoni to resolve, "J" to choose\n'
        "  add-from-hand  starts at a standard order the hand must complete\n"
        "  bombastica     starts at a Bombastica to fill up to 15 from hand\n"
        "  decline        starts at a resolution whose options include declining\n"
        "  resume         the connection is cut after the 3rd answer: reconnect and answer\n"
        "                 the open decision (Snapshot.decision) before its default\n"
        "  refused        the kit answers the first decision first: the client's answer is\n"
        "                 refused (REFUSAL_ALREADY_ANSWERED) or a repeat; play on\n"
        "  deadline       a 1000 ms deadline and no time bank: no default applied\n\n"
        "ladder scenarios (with --ladder-client; then SIGTERM: exit 0 within 5 s):\n"
        "  ladder-enter     no key file yet: register the name, write the key to the key\n"
        "                   file (mode 0600) and enter\n"
        "  ladder-matches   play 3 matches assigned one after another, each to its end\n"
        "                   (on one PlayMatches call or on Play calls)\n"
        "  ladder-replaced  a second copy with the same name and key file enters: the\n"
        "                   first exits within 10 s without entering again, the second\n"
        "                   plays the next match\n"
        "  ladder-host      the match runs on another host (Assignment.host_address)\n"
        "  ladder-key       the key file holds a wrong key: exit non-zero within 10 s,\n"
        "                   after at most 3 Enter calls\n"
        "  ladder-drain     the host drains and comes back: enter again within 20 s and\n"
        "                   play the next match\n\n"
        "examples:\n"
        '  mammamia conformance --client "node bots/node/bot.js --server {server} '
        '--token {token}"\n'
        '  mammamia conformance --ladder-client "node bots/node/bot.js --server {server} '
        '--ladder --name {name} --key-file {key_file}"',
    )
    options.one_line_errors(p)
    p.add_argument(
        "--client",
        metavar="CMD",
        help="the client command for one seat, split like a shell would; {server} becomes "
        "host:port and {token} the seat token in each argument (both required)",
    )
    p.add_argument(
        "--ladder-client",
        metavar="CMD",
        help="the client command on the ladder, which runs the ladder scenarios too: "
        "{server} becomes host:port, {name} the bot's name and {key_file} the path of its "
        "key file (all three required)",
    )
    p.add_argument(
        "--only",
        action="append",
        choices=NAMES + LADDER_NAMES,
        metavar="NAME",
        help="run only this scenario (repeatable): " + ", ".join(NAMES + LADDER_NAMES),
    )
    p.add_argument(
        "--timeout",
        type=options.timeout,
        default=60.0,
        metavar="SECONDS",
        help="how long one scenario may take (default 60)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the results as one JSON object instead of a table",
    )
    p.set_defaults(func=_conformance)


def _usage(message: str) -> int:
    print(f"mammamia conformance: {message}", file=sys.stderr)
    return EXIT_USAGE


def _template(option: str, command: str, placeholders: tuple[str, ...]) -> list[str] | str:
    """Returns the command split like a shell would, or why it is bad usage."""
    try:
        template = shlex.split(command)
    except ValueError as e:
        return f"{option}: {e}"
    if not template:
        return f"{option}: an empty command"
    for placeholder in placeholders:
        if not any(placeholder in a for a in template):
            return f"{option}: the command has no {placeholder}"
    if shutil.which(template[0]) is None:
        return f"{option}: cannot run {template[0]!r}: not found or not executable"
    return template


def _conformance(args: argparse.Namespace) -> int:
    if args.client is None and args.ladder_client is None:
        return _usage("give --client CMD, --ladder-client CMD or both")
    single: list[str] | None = None
    ladder: list[str] | None = None
    if args.client is not None:
        got = _template("--client", args.client, ("{server}", "{token}"))
        if isinstance(got, str):
            return _usage(got)
        single = got
    if args.ladder_client is not None:
        got = _template("--ladder-client", args.ladder_client, ("{server}", "{name}", "{key_file}"))
        if isinstance(got, str):
            return _usage(got)
        ladder = got
    only: list[str] = args.only or []
    for name in only:
        if name in NAMES and single is None:
            return _usage(f"--only {name} needs --client")
        if name in LADDER_NAMES and ladder is None:
            return _usage(f"--only {name} needs --ladder-client")
    single_names = [n for n in NAMES if n in only] if only else list(NAMES)
    ladder_names = [n for n in LADDER_NAMES if n in only] if only else list(LADDER_NAMES)

    import asyncio
    import logging

    from client_sdk import logs

    from .kit import Kit, Verdict
    from .ladder import LadderKit

    logs.configure(None, logging.WARNING, sys.stderr, cache=True)

    def progress(line: str) -> None:
        print(f"conformance: {line}", file=sys.stderr, flush=True)

    async def run() -> list[Verdict]:
        verdicts: list[Verdict] = []
        if single is not None and single_names:
            kit = Kit(single, timeout=args.timeout, progress=progress)
            verdicts += await kit.run(single_names)
        if ladder is not None and ladder_names:
            ladder_kit = LadderKit(ladder, timeout=args.timeout, progress=progress)
            verdicts += await ladder_kit.run(ladder_names)
        return verdicts

    verdicts = asyncio.run(run())
    passed = all(v.passed for v in verdicts)
    if args.json:
        print(
            json.dumps(
                {
                    "passed": passed,
                    "client": args.client,
                    "ladder_client": args.ladder_client,
                    "scenarios": [v.to_json() for v in verdicts],
                }
            )
        )
    else:
        width = max(len(v.name) for v in verdicts)
        print(f"{'scenario':<{width}}  result  why")
        for v in verdicts:
            print(f"{v.name:<{width}}  {'pass' if v.passed else 'FAIL':<6}  {v.why}")
        for v in verdicts:
            if not v.passed and v.stderr_tail:
                print(f"\n--- {v.name}: the client's stderr, last {len(v.stderr_tail)} lines")
                for line in v.stderr_tail:
                    print(f"    {line}")
        total = sum(v.passed for v in verdicts)
        print(f"\n{total} of {len(verdicts)} passed")
    return 0 if passed else EXIT_FAILED
