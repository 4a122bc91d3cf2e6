"""The ``mammamia rules-serve`` command: the Rules service beside a bot.

Kept light (no gRPC import at module level) so that ``mammamia --help`` is quick.
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import options
from ..options import env, env_default

EXIT_BAD_INPUT = 2


def register_rules_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds the ``rules-serve`` command."""
    from .states import DEFAULT_LIMIT

    p = sub.add_parser(
        "rules-serve",
        help="run the rules as a local gRPC service, for search bots",
        description="Run the Rules service (protos/mammamia/v1/rules.proto): game states "
        "behind handles, legal options, actions, determinized samples of what a seat "
        "cannot see, and playouts with the built-in policies, for a bot in any language "
        "to search with (docs/rules-service.md). Every option can also be set by the "
        "environment variable named in its help. SIGTERM or Ctrl-C stops it.",
    )
    options.one_line_errors(p)
    p.add_argument(
        "--host",
        default=env("MAMMAMIA_RULES_HOST", "127.0.0.1"),
        help="address to bind (MAMMAMIA_RULES_HOST, default 127.0.0.1)",
    )
    p.add_argument(
        "--port",
        type=options.port,
        default=env_default("MAMMAMIA_RULES_PORT", "50052"),
        help="port to bind, 0 for any free one (MAMMAMIA_RULES_PORT, default 50052)",
    )
    p.add_argument(
        "--port-file",
        default=env("MAMMAMIA_RULES_PORT_FILE"),
        metavar="PATH",
        help="write the bound port to PATH once serving (MAMMAMIA_RULES_PORT_FILE)",
    )
    p.add_argument(
        "--max-states",
        type=options.positive,
        default=env_default("MAMMAMIA_RULES_MAX_STATES", str(DEFAULT_LIMIT)),
        metavar="N",
        help="game states held at once; a call that would hold "
        "more is refused with RESOURCE_EXHAUSTED (MAMMAMIA_RULES_MAX_STATES, "
        f"default {DEFAULT_LIMIT})",
    )
    p.add_argument(
        "--log-format",
        choices=("console", "json"),
        default=env("MAMMAMIA_LOG_FORMAT"),
        help="log format (MAMMAMIA_LOG_FORMAT; console on a terminal, else json)",
    )
    p.add_argument(
        "--log-calls",
        action="store_true",
        default=env("MAMMAMIA_RULES_LOG_CALLS", "") not in ("", "0"),
        help="log every call with its time in milliseconds, at debug level "
        "(MAMMAMIA_RULES_LOG_CALLS=1)",
    )
    p.set_defaults(func=_rules_serve)


def _rules_serve(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from client_sdk import logs

    logs.configure(
        args.log_format, level=logging.DEBUG if args.log_calls else logging.INFO, cache=True
    )
    try:
        try:
            import uvloop
        except ImportError:
            asyncio.run(_run(args))
        else:
            uvloop.run(_run(args))
    except _CannotListen as e:
        print(f"mammamia rules-serve: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


class _CannotListen(OSError):
    """The service cannot bind its address."""


async def _run(args: argparse.Namespace) -> None:
    import asyncio
    import signal

    import structlog

    from .policies import installed
    from .servicer import create_server

    log = structlog.get_logger()
    host = args.host
    address = (
        f"[{host}]:{args.port}"
        if ":" in host and not host.startswith("[")
        else f"{host}:{args.port}"
    )
    policies = installed()
    try:
        server, port, _ = await create_server(
            address, max_states=args.max_states, policies=policies, debug=args.log_calls
        )
    except RuntimeError as e:
        raise _CannotListen(
            f"cannot listen on {address}: {e} (another service there? "
            "pick another --port, or 0 for any free one)"
        ) from None
    await server.start()
    log.info(
        "rules_serving",
        address=f"{host}:{port}",
        max_states=args.max_states,
        policies=sorted(policies),
    )
    if args.port_file:
        tmp = f"{args.port_file}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.port_file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("rules_stopping")
    await server.stop(grace=1.0)
