"""``/metrics`` of a real server whose ladder real bots play: scraped over HTTP on the
web page's port and on ``--metrics-port``, parsed with prometheus-client's own
parser, its counters checked against what the ladder stored; the per-bot series
stay within their bound; a bot's page gives its decision times."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from typing import Any

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from server.metrics import NOT_LADDER, OTHER, Metrics
from tests.conftest import MAMMAMIA

from .conftest import get_json, wait_for, web_url

BOTS = {"random-1": "random", "random-2": "random", "greedy-1": "greedy", "counter-1": "counter"}
BOUND = 2  # --metrics-bots: fewer than the bots that play


def scrape(url: str) -> dict[str, Metric]:
    """Returns the metric families of a scrape of ``url``, by name."""
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def value(families: dict[str, Metric], sample: str, **labels: str) -> float:
    """Returns the value of the sample ``sample`` with ``labels`` (0 when absent)."""
    for family in families.values():
        for s in family.samples:
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return 0.0


def metrics_port(server: Any) -> int:
    """Returns the port the server logged for ``--metrics-port`` (``metrics_serving``)."""

    def logged() -> int | None:
        for line in server.logs().splitlines():
            if '"metrics_serving"' in line:
                return int(json.loads(line)["port"])
        return None

    return wait_for(logged, 10, "the metrics_serving log line")


def finished_on_ladder(url: str) -> int:
    """Returns how many finished matches the ladder lists."""
    matches = get_json(url + "api/matches?limit=100")[1]["matches"]
    return sum(1 for m in matches if m["status"] == "finished")


def test_metrics_agree_with_the_ladder_and_bound_the_bots(
    start_server: Any, ladder_bots: Any
) -> None:
    server = start_server(
        ladder_players="2-3",
        ladder_start_timeout=2,
        web_port=0,
        metrics_port=0,
        metrics_bots=BOUND,
    )
    url = web_url(server)
    alone = f"http://127.0.0.1:{metrics_port(server)}/metrics"
    before = scrape(alone)
    assert value(before, "mammamia_matches_finished_total", outcome="finished") == 0
    assert {"finished", "aborted", "voided"} <= {
        s.labels["outcome"] for s in before["mammamia_matches_finished"].samples
    }

    bots = ladder_bots(server.address, BOTS)
    wait_for(lambda: finished_on_ladder(url) >= 4, 90, "four finished ladder matches")
    for process in bots.values():
        process.send_signal(signal.SIGINT)
    for process in bots.values():
        process.wait(timeout=30)

    # Once no match runs, the counter is the ladder's count of finished matches.
    def settled() -> tuple[dict[str, Metric], int] | None:
        families = scrape(url + "metrics")
        finished = finished_on_ladder(url)
        counted = value(families, "mammamia_matches_finished_total", outcome="finished")
        running = value(families, "mammamia_matches_running")
        return (families, finished) if running == 0 and counted == finished else None

    families, finished = wait_for(settled, 60, "the matches to end and be counted")
    assert finished >= 4
    # Both ports serve the same server's metrics.
    assert value(scrape(alone), "mammamia_matches_finished_total", outcome="finished") == finished

    # Every accepted answer was timed, under a bounded set of bot labels.
    decisions = families["mammamia_decision_seconds"]
    counts = {s.labels["bot"]: s.value for s in decisions.samples if s.name.endswith("_count")}
    assert sum(counts.values()) > 0
    named = set(counts) - {OTHER, NOT_LADDER}
    assert named <= set(BOTS)
    assert len(named) == BOUND
    assert OTHER in counts  # the bots past the bound share one series
    labels = {
        s.labels["bot"]
        for name in ("mammamia_decision_seconds", "mammamia_deadline_misses")
        for s in families[name].samples
        if "bot" in s.labels
    }
    assert labels <= named | {OTHER, NOT_LADDER}

    # The writes were timed: the server's and the ladder's writers, and the journal.
    writers = {
        s.labels["writer"]
        for s in families["mammamia_db_write_seconds"].samples
        if s.name.endswith("_count") and s.value > 0
    }
    assert len(writers) >= 2
    assert value(families, "mammamia_journal_write_seconds_count") > 0
    assert value(families, "mammamia_ladder_unrated_results") == 0
    assert value(families, "mammamia_streams_open") == 0
    for name in ("mammamia_ladder_bots_waiting", "mammamia_ladder_scheduling_lag_seconds"):
        assert name in families

    # Each bot's page gives its own decision times, past the bound too.
    for name in BOTS:
        decided = get_json(url + f"api/bots/{name}")[1]["decisions"]
        assert decided["answered"] > 0
        assert decided["mean_ms"] >= 0 and decided["slowest_ms"] >= decided["mean_ms"]
        assert decided["deadline_misses"] >= 0


def test_a_crowd_of_names_stays_within_the_bound() -> None:
    metrics = Metrics(bots_max=3)
    for i in range(500):
        metrics.answered(f"bot-{i}", True, 0.01)
        metrics.missed(f"bot-{i}", True, "late")
    metrics.answered("organised", False, 0.02)
    labels = {
        s.labels["bot"]
        for family in metrics.registry.collect()
        for s in family.samples
        if "bot" in s.labels
    }
    assert labels == {"bot-0", "bot-1", "bot-2", OTHER, NOT_LADDER}
    # Each bot still has its own times for its page.
    times = metrics.bot_times("bot-499")
    assert times is not None and times.answered == 1 and times.missed == 1


def test_a_bots_page_shows_its_decision_times(
    start_server: Any, ladder_bots: Any, page: Any
) -> None:
    server = start_server(ladder_players="2-3", ladder_start_timeout=2, web_port=0)
    url = web_url(server)
    ladder_bots(server.address, {"random-1": "random", "greedy-1": "greedy"})
    wait_for(lambda: finished_on_ladder(url) >= 1, 90, "a finished ladder match")
    page.goto(url + "#/bot/greedy-1")
    facts = page.get_by_test_id("decision-times")
    facts.wait_for()
    text = facts.inner_text()
    assert "Decisions answered" in text and "Deadline misses" in text
    answered = int(text.split("Decisions answered")[1].split()[0])
    assert answered > 0
    assert "ms" in text.split("Mean answer")[1]


def test_a_server_without_a_page_serves_metrics_on_its_own_port(start_server: Any) -> None:
    # The port from the environment, as every serve flag may be given.
    server = start_server(no_web=True, start_timeout=0.5, env={"MAMMAMIA_METRICS_PORT": "0"})
    url = f"http://127.0.0.1:{metrics_port(server)}/metrics"
    families = scrape(url)
    assert value(families, "mammamia_matches_running") == 0
    assert '"web_serving"' not in server.logs()
    # A match no seat joins: it starts after the start timeout, and the server plays
    # every seat by the default policy (three missed deadlines each, then autopilot).
    done = subprocess.run(
        [
            str(MAMMAMIA),
            "match",
            "create",
            "--server",
            server.address,
            "--players",
            "2",
            "--deadline",
            "0.05",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MAMMAMIA_ORGANISER_KEY": server.organiser_key},
        check=False,
    )
    assert done.returncode == 0, done.stderr

    def ended() -> dict[str, Metric] | None:
        families = scrape(url)
        counted = value(families, "mammamia_matches_finished_total", outcome="finished")
        return families if counted == 1 else None

    finished = wait_for(ended, 30, "the match to end and be counted")
    assert value(finished, "mammamia_matches_running") == 0
    # Its seats are outside the ladder: one bot label for them all, and no answer.
    misses = value(
        finished, "mammamia_deadline_misses_total", bot=NOT_LADDER, reason="disconnected"
    )
    assert misses == 6
    assert value(finished, "mammamia_decision_seconds_count", bot=NOT_LADDER) == 0


def test_two_hosts_on_postgresql_add_up_to_the_ladder(
    start_server: Any, ladder_bots: Any, postgres_url: str
) -> None:
    hosts = [
        start_server(
            db=postgres_url,
            host_id=f"host-{i}",
            ladder_players="2",
            ladder_start_timeout=2,
            web_port=0,
        )
        for i in range(2)
    ]
    urls = [web_url(host) for host in hosts]
    bots: dict[str, Any] = {}
    for i, host in enumerate(hosts):  # two bots entered through each host
        bots |= ladder_bots(host.address, {f"random-{i}": "random", f"greedy-{i}": "greedy"})

    wait_for(lambda: finished_on_ladder(urls[0]) >= 6, 120, "six finished ladder matches")
    for process in bots.values():
        process.send_signal(signal.SIGINT)
    for process in bots.values():
        process.wait(timeout=30)

    # Each host counts the matches it ran; together they are the ladder's.
    def added_up() -> list[dict[str, Metric]] | None:
        scraped = [scrape(u + "metrics") for u in urls]
        counted = sum(
            value(f, "mammamia_matches_finished_total", outcome="finished") for f in scraped
        )
        running = sum(value(f, "mammamia_matches_running") for f in scraped)
        return scraped if running == 0 and counted == finished_on_ladder(urls[0]) else None

    scraped = wait_for(added_up, 60, "both hosts' counts to add up to the ladder's")
    answered = [value(f, "mammamia_decision_seconds_count", bot="random-0") for f in scraped]
    assert sum(answered) > 0
    # One database: both hosts read the same unrated count, and nobody waits now.
    assert [value(f, "mammamia_ladder_unrated_results") for f in scraped] == [0, 0]
    assert all(value(f, "mammamia_ladder_bots_waiting") == 0 for f in scraped)
