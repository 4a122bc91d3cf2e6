"""``/metrics`` over HTTP, as an extension of ``mammamia serve`` (entry-point group
``mammamia.server``).

``add_arguments`` adds ``--metrics-port`` (a port of its own for ``/metrics``, for a
server without its page, or to keep the scrape off the page's port) and
``--metrics-bots`` (the bound on per-bot series, ``server.metrics``). The web page
serves ``/metrics`` too (``server.web.api``), with the same handler
(``server.web.scrape``). Kept
light: aiohttp is imported by ``install`` only.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

import structlog

from .. import options
from ..metrics import BOTS_MAX
from ..options import env_default
from .scrape import handler
from .serve import bind

if TYPE_CHECKING:
    from ..app import Arena

log = structlog.get_logger()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds ``--metrics-port`` and ``--metrics-bots`` to ``mammamia serve``."""
    g = parser.add_argument_group(
        "metrics", "Prometheus metrics at /metrics (docs/operating.md#metrics)"
    )
    g.add_argument(
        "--metrics-port",
        type=options.port,
        default=env_default("MAMMAMIA_METRICS_PORT", "") or None,
        metavar="PORT",
        help="also serve /metrics alone on this port of --host, 0 for any free one "
        "(MAMMAMIA_METRICS_PORT; default none: /metrics is on the web page's port)",
    )
    g.add_argument(
        "--metrics-bots",
        type=options.count,
        default=env_default("MAMMAMIA_METRICS_BOTS", str(BOTS_MAX)),
        metavar="N",
        help="ladder bots with per-bot series of their own at most; later ones share "
        f'bot="(other)" (MAMMAMIA_METRICS_BOTS, default {BOTS_MAX})',
    )


def install(arena: Arena, args: argparse.Namespace) -> None:
    """Bounds the per-bot series, and binds ``--metrics-port`` (when given) to serve
    ``/metrics`` once the server runs. A port that cannot be bound is logged as
    ``metrics_unavailable`` and the server runs without it."""
    arena.metrics.bots_max = args.metrics_bots
    if args.metrics_port is None:
        return
    from aiohttp import web

    host = args.host
    try:
        sock = bind(host, args.metrics_port)
    except OSError as e:
        log.error(
            "metrics_unavailable",
            host=host,
            port=args.metrics_port,
            error=e.strerror or str(e),
            hint="pick another --metrics-port (0: any free one)",
        )
        return
    port = sock.getsockname()[1]
    app = web.Application()
    app.router.add_get("/metrics", handler(arena))
    log.info("metrics_serving", port=port, path="/metrics")

    async def serve() -> None:
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.SockSite(runner, sock, shutdown_timeout=1.0)
        await site.start()
        try:
            await asyncio.Event().wait()  # until the server drains
        finally:
            await asyncio.shield(runner.cleanup())

    arena.add_task(serve)
