"""The server's Prometheus metrics: one registry per server, what the core counts,
and its exposition (``/metrics``, docs/operating.md lists every metric).

Each server (``server.app.Arena.metrics``) has a :class:`Metrics` of its own, on a
registry of its own rather than prometheus-client's global one: a process that runs
several servers (the tests do, one after another) counts each apart, and a scrape
shows only the server it asks.

What is counted where:

- the runners (``server.runners``, ``server.runner``): matches ended by outcome, each
  accepted answer's time from the decision asked to the answer, each deadline the
  server defaulted; matches running and streams open are read at each scrape;
- the writers (``server.db.writer``) and the journal (``server.db.journal``): how long
  each write takes to commit;
- the garbage collector: each collection's pause (a ``gc.callbacks`` entry that only
  notes the time, on whichever thread collects; the pauses enter the histogram on the
  event loop at the next scrape);
- extensions (the ladder) set their own gauges before each scrape
  (:meth:`Metrics.on_scrape`).

The per-bot series carry a ``bot`` label whose values are bounded: the first
``bots_max`` ladder bots to play on this server get their own name, every later one
shares :data:`OTHER`, and seats of matches outside the ladder are :data:`NOT_LADDER`.
A ladder name is ``[A-Za-z0-9._-]``, so neither can be a bot's. However many names
register and play, a per-bot metric has at most ``bots_max + 2`` label values.
"""

from __future__ import annotations

import asyncio
import gc
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

BOTS_MAX: Final = 100
"""Ladder bots with series of their own at most, by default (``--metrics-bots``)."""
OTHER: Final = "(other)"
"""The ``bot`` label of the ladder bots past the bound."""
NOT_LADDER: Final = "(none)"
"""The ``bot`` label of the seats of matches outside the ladder."""
STATS_MAX: Final = 10_000
"""Ladder bots whose decision times the bot page can show, at most (the first to
have played forgotten first)."""
PAUSES_HELD: Final = 10_000
"""Collector pauses noted between two scrapes at most (the oldest go first)."""

OUTCOMES: Final = ("finished", "aborted", "voided")
DECISION_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
WRITE_BUCKETS: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
)
PAUSE_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)

Refresh = Callable[[], Awaitable[None]]
"""Sets an extension's gauges before a scrape (on the event loop)."""


class Histogram:
    """One histogram series, counted by one thread at a time (the event loop, or one
    writer thread): an observation is a bisection and two additions, with no lock.

    prometheus-client's own ``Histogram.observe`` takes two locks and walks every
    bucket, about ten times the cost, on the path of every decision; its exposition
    reads these counts through :class:`Histograms`, a collector of the library's.
    """

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # per bucket, not cumulative; +Inf last
        self.sum = 0.0

    def observe(self, value: float) -> None:
        """Counts ``value`` in the first bucket whose bound is at least it."""
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value


class Histograms(Collector):
    """A histogram metric whose series are :class:`Histogram` s, one per label values,
    exposed by prometheus-client as any histogram (``_bucket``, ``_count``, ``_sum``)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.bounds = tuple(buckets)
        self._series: dict[tuple[str, ...], Histogram] = {}
        registry.register(self)

    def labels(self, *values: str) -> Histogram:
        """Returns the series of the label ``values`` (made on first use)."""
        series = self._series.get(values)
        if series is None:
            series = self._series[values] = Histogram(self.bounds)
        return series

    def observe(self, value: float) -> None:
        """Counts ``value`` in the series of a metric without labels."""
        self.labels().observe(value)

    def describe(self) -> Iterable[Metric]:
        """Returns the metric with no samples (for the registry's name checks)."""
        return [HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)]

    def collect(self) -> Iterable[Metric]:
        """Returns the metric with every series' cumulative buckets, count and sum (on
        the scrape's thread: each list is copied whole, the sum read once)."""
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, series in list(self._series.items()):
            counts, total = list(series.counts), series.sum
            buckets: list[tuple[str, float]] = []
            cumulative = 0
            for bound, count in zip((*self.bounds, float("inf")), counts, strict=True):
                cumulative += count
                buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
            family.add_metric(list(values), buckets, total)
        return [family]


@dataclass(slots=True)
class BotTimes:
    """One ladder bot's decisions on this server since it started: answers, their
    total and slowest time (seconds), and deadlines the server defaulted."""

    answered: int = 0
    seconds: float = 0.0
    slowest: float = 0.0
    missed: int = 0
    since: float = 0.0  # UNIX time of the first one


class Metrics:
    """The metrics of one server (see the module)."""

    def __init__(self, bots_max: int = BOTS_MAX) -> None:
        self.bots_max = bots_max
        self.registry = CollectorRegistry()
        r = self.registry
        self.matches_finished = Counter(
            "mammamia_matches_finished",
            "Matches ended on this server, by outcome: finished (played to the end), "
            "aborted (cut off), voided (a finished match an operator voided).",
            ["outcome"],
            registry=r,
        )
        for outcome in OUTCOMES:
            self.matches_finished.labels(outcome)
        self.decision_seconds = Histograms(
            "mammamia_decision_seconds",
            "A bot's time from a decision asked to its answer accepted, by bot "
            f"(ladder bots; {OTHER} past the bound, {NOT_LADDER} outside the ladder).",
            ["bot"],
            buckets=DECISION_BUCKETS,
            registry=r,
        )
        self.deadline_misses = Counter(
            "mammamia_deadline_misses",
            "Decisions the server took for a bot by the default policy: late (no "
            "answer by the deadline) or disconnected (no stream open), by bot.",
            ["bot", "reason"],
            registry=r,
        )
        self.matches_running = Gauge(
            "mammamia_matches_running", "Matches this server holds that have not ended.", registry=r
        )
        self.streams_open = Gauge(
            "mammamia_streams_open",
            "Streams open on this server (Observe, Play, Watch and the page's live views).",
            registry=r,
        )
        self.bots_waiting = Gauge(
            "mammamia_ladder_bots_waiting",
            "Ladder bots entered on this server and waiting for a match.",
            registry=r,
        )
        self.scheduling_lag = Gauge(
            "mammamia_ladder_scheduling_lag_seconds",
            "How long the ladder bot waiting longest on this server has waited for a match.",
            registry=r,
        )
        self.unrated = Gauge(
            "mammamia_ladder_unrated_results",
            "Finished ladder results stored and not rated yet.",
            registry=r,
        )
        self.db_write_seconds = Histograms(
            "mammamia_db_write_seconds",
            "A database write's time on its writer thread (one transaction), by writer.",
            ["writer"],
            buckets=WRITE_BUCKETS,
            registry=r,
        )
        self.journal_write_seconds = Histograms(
            "mammamia_journal_write_seconds",
            "A journalled input's time from written ahead to committed.",
            buckets=WRITE_BUCKETS,
            registry=r,
        )
        self.collector_pause_seconds = Histograms(
            "mammamia_collector_pause_seconds",
            "The garbage collector's pauses, by generation.",
            ["generation"],
            buckets=PAUSE_BUCKETS,
            registry=r,
        )
        self._labels: dict[str, str] = {}  # the ladder bots with series of their own
        # Ladder bot -> (its decision series, its figures for its page): one lookup
        # per answer. Oldest first, at most STATS_MAX.
        self._bots: dict[str, tuple[Histogram, BotTimes]] = {}
        self._refresh: list[Refresh] = []
        self._running: Callable[[], tuple[int, int]] | None = None
        self._pauses: deque[tuple[int, float]] = deque(maxlen=PAUSES_HELD)
        self._gc_started = 0.0
        self._gc_watched = False

    # -- bots --------------------------------------------------------------------------

    def bot_label(self, name: str, ladder: bool) -> str:
        """Returns the ``bot`` label of a seat named ``name`` (see the module)."""
        if not ladder:
            return NOT_LADDER
        label = self._labels.get(name)
        if label is None:
            if len(self._labels) >= self.bots_max:
                return OTHER  # not remembered: a crowd of names costs no memory here
            label = self._labels[name] = name
        return label

    def answered(self, name: str, ladder: bool, seconds: float) -> None:
        """Counts an accepted answer that came ``seconds`` after its decision was asked."""
        if not ladder:
            self.decision_seconds.labels(NOT_LADDER).observe(seconds)
            return
        bot = self._bots.get(name) or self._bot(name)
        bot[0].observe(seconds)
        times = bot[1]
        times.answered += 1
        times.seconds += seconds
        if seconds > times.slowest:
            times.slowest = seconds

    def missed(self, name: str, ladder: bool, reason: str) -> None:
        """Counts a decision the server defaulted (``reason``: late or disconnected)."""
        self.deadline_misses.labels(self.bot_label(name, ladder), reason).inc()
        if ladder:
            (self._bots.get(name) or self._bot(name))[1].missed += 1

    def _bot(self, name: str) -> tuple[Histogram, BotTimes]:
        if len(self._bots) >= STATS_MAX:
            del self._bots[next(iter(self._bots))]
        bot = self._bots[name] = (
            self.decision_seconds.labels(self.bot_label(name, True)),
            BotTimes(since=time.time()),
        )
        return bot

    def bot_times(self, name: str) -> BotTimes | None:
        """Returns a ladder bot's decisions on this server, or None when it has had none."""
        bot = self._bots.get(name)
        return None if bot is None else bot[1]

    # -- matches -----------------------------------------------------------------------

    def match_ended(self, status: str) -> None:
        """Counts a match whose end is stored (``status``: finished or aborted)."""
        self.matches_finished.labels(status).inc()

    def match_voided(self) -> None:
        """Counts a finished match an operator voided: for the code that records a void."""
        self.matches_finished.labels("voided").inc()

    def count_running(self, running: Callable[[], tuple[int, int]]) -> None:
        """Reads (matches running, streams open) from ``running()`` at each scrape."""
        self._running = running

    # -- writes ------------------------------------------------------------------------

    def write_timer(self, writer: str) -> Callable[[float], None]:
        """Returns what a writer calls with each write's seconds (``writer``: its name)."""
        # Each writer counts on its own thread, in a series of its own.
        return self.db_write_seconds.labels(writer).observe

    def journal_timer(self) -> Callable[[float], None]:
        """Returns what the journal calls with each input's seconds to commit."""
        return self.journal_write_seconds.labels().observe

    # -- the collector -----------------------------------------------------------------

    def watch_collector(self) -> None:
        """Notes the garbage collector's pauses from now on (until :meth:`close`)."""
        if not self._gc_watched:
            gc.callbacks.append(self._collecting)
            self._gc_watched = True

    def _collecting(self, phase: str, info: dict[str, Any]) -> None:
        # Inside a collection, on whichever thread allocated: nothing is counted here
        # (a collection may interrupt a count), only noted; refresh counts on the loop.
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self._pauses.append((info["generation"], time.perf_counter() - self._gc_started))

    def close(self) -> None:
        """Stops watching the collector."""
        if self._gc_watched:
            gc.callbacks.remove(self._collecting)
            self._gc_watched = False

    # -- the scrape --------------------------------------------------------------------

    def on_scrape(self, refresh: Refresh) -> None:
        """Awaits ``refresh()`` before each scrape, to set an extension's gauges."""
        self._refresh.append(refresh)

    async def refresh(self) -> None:
        """Sets the gauges read at a scrape, and enters the collector's pauses."""
        if self._running is not None:
            running, streams = self._running()
            self.matches_running.set(running)
            self.streams_open.set(streams)
        pauses = self._pauses
        while pauses:
            generation, seconds = pauses.popleft()
            self.collector_pause_seconds.labels(str(generation)).observe(seconds)
        for refresh in self._refresh:
            await refresh()

    async def exposition(self, accept: str = "") -> tuple[bytes, str]:
        """Returns (body, content type) of a scrape: the text format prometheus-client
        writes (OpenMetrics when ``accept``, the scraper's Accept header, asks for it).
        Written on a worker thread: the event loop only refreshes the gauges."""
        await self.refresh()
        encode, content_type = choose_encoder(accept)
        body = await asyncio.to_thread(encode, self.registry)
        return body, content_type
