"""The ladder's gauges on the server's metrics (``server.metrics``), set before each
scrape: the bots waiting and the scheduling lag (a ladder this host runs alone: its
lobby is in memory), and the results stored but not rated yet (read from the
database, on the ladder's reader thread)."""

from __future__ import annotations

import structlog

from ..db.connection import ERRORS
from ..metrics import Metrics
from .ladder import Ladder
from .lobby import LocalLobby

log = structlog.get_logger()


def watch(metrics: Metrics, ladder: Ladder) -> None:
    """Sets the ladder's gauges on ``metrics`` before each scrape."""

    async def refresh() -> None:
        lobby = ladder.lobby
        if isinstance(lobby, LocalLobby):
            scheduler = lobby.scheduler
            metrics.bots_waiting.set(len(scheduler.waiting))
            metrics.scheduling_lag.set(scheduler.longest_wait())
        try:
            metrics.unrated.set(await ladder.reader.unrated())
        except ERRORS as e:
            # The scrape goes on with the last count; the storage's own health says why.
            log.warning("metrics_read_failed", read="unrated", error=str(e))

    metrics.on_scrape(refresh)
