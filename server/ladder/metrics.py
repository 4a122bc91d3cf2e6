"""The ladder's gauges on the server's metrics (``server.metrics``), set before each
scrape: the bots entered on this host and waiting, how long the one waiting longest
has waited (from the lobby in memory, on a ladder this host runs alone; else from
the shared lobby's entries in the database; the leagues' bosses, which wait whenever
they play no match, left out), and the results stored but not rated
yet. The database is read on the ladder's reader thread."""

from __future__ import annotations

import structlog

from ..db.connection import ERRORS
from ..metrics import Metrics
from .ladder import Ladder
from .lobby import LocalLobby
from .shared_lobby import SharedLobby

log = structlog.get_logger()


def watch(metrics: Metrics, ladder: Ladder) -> None:
    """Sets the ladder's gauges on ``metrics`` before each scrape."""

    async def refresh() -> None:
        lobby = ladder.lobby
        try:
            if isinstance(lobby, LocalLobby):
                # The leagues' bosses wait whenever they play no match: not counted.
                scheduler = lobby.scheduler
                metrics.bots_waiting.set(len(set(scheduler.waiting) - lobby.bosses))
                metrics.scheduling_lag.set(scheduler.longest_wait(lobby.bosses))
            elif isinstance(lobby, SharedLobby):
                now = lobby.clock()
                since = await ladder.reader.waiting_since(lobby.host_id, now - lobby.stale)
                metrics.bots_waiting.set(len(since))
                metrics.scheduling_lag.set(max(0.0, now - min(since)) if since else 0.0)
            metrics.unrated.set(await ladder.reader.unrated())
        except ERRORS as e:
            # The scrape goes on with the last figures; the storage's own health says why.
            log.warning("metrics_read_failed", error=str(e))

    metrics.on_scrape(refresh)
