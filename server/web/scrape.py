"""The handler of ``GET /metrics``, on the web page's port and on ``--metrics-port``
(``server.web.metrics``): prometheus-client's exposition of the server's metrics
(``server.metrics``), written off the event loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import hdrs, web

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler

    from ..app import Arena


def handler(arena: Arena) -> Handler:
    """Returns the aiohttp handler of ``GET /metrics`` for ``arena``'s metrics."""

    async def metrics(request: web.Request) -> web.StreamResponse:
        accept = ",".join(request.headers.getall(hdrs.ACCEPT, []))
        body, content_type = await arena.metrics.exposition(accept)
        response = web.Response(body=body, headers={"Content-Type": content_type})
        response.headers["Cache-Control"] = "no-store"
        return response

    return metrics
