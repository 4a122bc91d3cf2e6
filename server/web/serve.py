"""The web page as an extension of ``mammamia serve`` (entry-point group ``mammamia.server``).

``add_arguments`` adds ``--web-port`` and ``--no-web``; ``install`` binds the page's
port at once (so the address is known, and logged as ``web_serving``, before the
server says it is serving) and serves it from a background task on the server's
own event loop, beside grpc.aio (see ``server.app``). Kept light: aiohttp is
imported by ``install`` only.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
from typing import TYPE_CHECKING

import structlog

from .. import options
from ..options import env_default

if TYPE_CHECKING:
    from ..app import Arena

log = structlog.get_logger()

DEFAULT_WEB_PORT = 8051


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds ``--web-port``, ``--no-web`` and ``--people-table`` to ``mammamia serve``."""
    g = parser.add_argument_group(
        "web",
        "the web page: standings, bots, matches, replays, live views, a seat to play (docs/web.md)",
    )
    g.add_argument(
        "--web-port",
        type=options.port,
        default=env_default("MAMMAMIA_WEB_PORT", str(DEFAULT_WEB_PORT)),
        metavar="PORT",
        help="port of the web page on --host, 0 for any free one "
        f"(MAMMAMIA_WEB_PORT, default {DEFAULT_WEB_PORT})",
    )
    g.add_argument("--no-web", action="store_true", help="serve no web page")
    g.add_argument(
        "--people-table",
        action="store_true",
        default=env_default("MAMMAMIA_PEOPLE_TABLE", "") not in ("", "0", "off", "no", "false"),
        help="keep a people's table: people who play in the page for it, by the name "
        "they give, rated as the ladder rates bots and kept apart from the bots' "
        "standings (docs/web.md; MAMMAMIA_PEOPLE_TABLE, default off)",
    )


def bind(host: str, port: int) -> socket.socket:
    """Returns a listening TCP socket on ``host:port``; raises OSError when it cannot
    be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    infos = socket.getaddrinfo(
        host.strip("[]") or None, port, family, socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    sock = socket.socket(infos[0][0], socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(infos[0][4])
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def url_of(host: str, port: int) -> str:
    """Returns the page's address for a bound host and port."""
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


def install(arena: Arena, args: argparse.Namespace) -> None:
    """Binds the web page's port and serves it once the server runs (unless
    ``--no-web``). A port that cannot be bound is logged as ``web_unavailable`` and
    the server runs without its page: the games matter more than their pictures."""
    if args.no_web:
        return
    from aiohttp import web

    from .api import make_app

    host = args.host
    try:
        sock = bind(host, args.web_port)
    except OSError as e:
        log.error(
            "web_unavailable",
            host=host,
            port=args.web_port,
            error=e.strerror or str(e),
            hint="pick another --web-port (0: any free one), or --no-web",
        )
        return
    port = sock.getsockname()[1]
    url = url_of(host, port)
    # The ladder's extension (installed before this one) leaves the competition it
    # runs in ``args.competition_run`` (server.competition.serve), and itself in
    # ``args.ladder_run``.
    app, page = make_app(
        arena,
        getattr(args, "competition_run", None),
        getattr(args, "ladder_run", None),
        people_table=args.people_table,
    )
    log.info("web_serving", url=url, port=port)

    async def serve() -> None:
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.SockSite(runner, sock, shutdown_timeout=1.0)
        await site.start()
        try:
            await asyncio.Event().wait()  # until the server drains
        finally:
            # Cancelled when the server drains: close the open streams, then the reads.
            await asyncio.shield(runner.cleanup())
            page.close()

    arena.add_task(serve)
