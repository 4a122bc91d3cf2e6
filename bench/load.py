"""Load: many concurrent matches, the bots real gRPC clients in other processes.

The server runs in its own process (``mammamia serve``); the bots are ``bench.crowd``
processes, each holding its share of the matches and answering at once with a
random option, so the server is never waiting for a bot to think: a closed loop
that runs as fast as the machine allows. Each match holder keeps a connection with
one CreateMatches call and a PlayMatches call per seat for all its matches (no new
call per match): places, which each CreateMatch request names, so that a match
starts with no ``sit`` (``--calls matches``: a ``sit`` per seat and match instead;
``--calls play``: a CreateMatch and a Play call per seat for every match), every
stream asking for the batching bound the SDK's bots ask for (``--batch-ms``).
Everything is on 127.0.0.1 and bounded in time.

One run holds ``seats / players`` matches: it waits for the opening (until every
match has been asked its first decision, ``opening_s``; at most 20 s and a second
per 50 seats), then a short warm-up, then a measuring window, and reports
decisions per second and messages per decision, the decision latency a client
sees (request received -> the match's next request received) at p50 and p99, the
server's peak resident memory (psutil) and CPU use (and the bots'), errors (refused
answers, aborted matches, failed calls: there must be none), how long a new match
takes to start (CreateMatch sent -> its first decision request; the CreateMatch
alone beside it) and to end (its last request -> its last seat told), how many
matches were in play on average, and, probed meanwhile with calls that carry an
unknown seat token, how long a new Play call and a new Join call wait before the
server takes them up (and refuses them). The step-up runs 100, 200, 400, 1,000,
2,000 and 4,000 seats (a fresh server each), every step whatever the ones before
measured; ``max_seats_p99_under_100ms`` is the largest up to which every step kept
its p99 under 100 ms with no error.

``python -m bench.load`` prints a table; ``run()`` returns the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import psutil

from .crowd import BATCH_MS, CALLS
from .latency import summary
from .serve import Server, cpu_seconds, output_end, python_module, stop, written_figures

TARGET_SEATS: Final = 1000
STEPS: Final = (100, 200, 400, 1000, 2000, 4000)
P99_LIMIT_MS: Final = 100.0
CLIENT_GRACE: Final = 60.0  # how long a crowd may take to stop after its window
OPENING_LIMIT_S: Final = 20.0  # (plus a second per 50 seats) for every match to start


def measure(
    seats: int,
    *,
    players: int = 4,
    clients: int = 2,
    seconds: float = 10.0,
    warmup: float | None = None,
    seed: int = 0,
    calls: str = "places",
    batch_ms: int = BATCH_MS,
) -> dict[str, Any]:
    """Returns the figures of ``seats`` seats (``seats // players`` matches) held by
    ``clients`` crowd processes through the opening, a warm-up of ``warmup``
    seconds (default: 3 s and a second per 100 matches), then ``seconds`` of
    measurement,
    each seat on a PlayMatches call for every match, a place (``calls="places"``) or
    sent a ``sit`` per match (``calls="matches"``), or on a new Play call per match
    (``calls="play"``), every stream asking for ``batch_ms``
    (ObserveRequest.batch_ms; 0: the server's 20 ms)."""
    matches = max(1, seats // players)
    clients = max(1, min(clients, matches))
    if warmup is None:
        # After the opening, the first matches end and are replaced.
        warmup = 3.0 + matches / 100
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        directory = Path(tmp)
        window = directory / "window.json"
        with Server(directory) as server:
            process = psutil.Process(server.pid)
            idle_rss = process.memory_info().rss
            launched = time.time()
            crowds = []
            for i in range(clients):
                share = matches // clients + (i < matches % clients)
                out = directory / f"crowd-{i}.json"
                log = open(directory / f"crowd-{i}.log", "wb")  # noqa: SIM115 (closed below)
                crowds.append(
                    (
                        out,
                        log,
                        python_module(
                            "bench.crowd",
                            "--server",
                            server.address,
                            "--organiser-key",
                            server.organiser_key,
                            "--matches",
                            str(share),
                            "--players",
                            str(players),
                            "--window",
                            str(window),
                            "--ready",
                            str(directory / f"crowd-{i}.ready"),
                            "--opened",
                            str(directory / f"crowd-{i}.opened"),
                            "--go",
                            str(directory / "go"),
                            "--seed",
                            str(seed + i),
                            "--out",
                            str(out),
                            "--calls",
                            calls,
                            "--batch-ms",
                            str(batch_ms),
                            *(["--probe"] if i == 0 else []),
                            log=log,
                        ),
                    )
                )
            bots = [psutil.Process(child.pid) for _, _, child in crowds]
            # Every crowd's calls up before any match starts (on an idle server they
            # are taken up at once), then every match in play.
            _wait_for(directory, "opened", clients, OPENING_LIMIT_S + seats / 50)
            (directory / "go").touch()
            opening = _wait_for(directory, "ready", clients, OPENING_LIMIT_S + seats / 50)
            start_at = time.time() + warmup
            stop_at = start_at + seconds
            window.write_text(
                json.dumps({"start_at": start_at, "stop_at": stop_at}), encoding="utf-8"
            )
            seen = _watch(process, bots, start_at, stop_at, every=max(1.0, seconds / 20))
            for _, log, child in crowds:
                try:
                    child.wait(CLIENT_GRACE)
                except subprocess.TimeoutExpired:
                    stop(child, 5)
                log.close()
            parts = [_read(out, log.name) for out, log, _ in crowds]
    latencies = [x for p in parts for x in p["latencies_us"]]
    decisions = sum(p["decisions"] for p in parts)
    messages = sum(p.get("messages", 0) for p in parts)
    ended = sum(p.get("matches_ended_in_window", 0) for p in parts)
    refusals = {
        m: summary(v, 1000, 1)["p50"] if v else None
        for m, v in parts[0].get("refusals_us", {}).items()
    }
    # None where the window saw none (no match ended, so none was replaced, in a
    # short window of a large step), rather than a time of 0.
    none: dict[str, float | None] = {"p50": None, "p99": None}
    starts = [x for p in parts for x in p.get("starts_us", ())]
    start_fig = summary(starts, 1000, 1) if starts else none
    ends = [x for p in parts for x in p.get("ends_us", ())]
    end_fig = summary(ends, 1000, 1) if ends else none
    creates = [x for p in parts for x in p.get("creates_us", ())]
    create_fig = summary(creates, 1000, 1) if creates else none
    fig = (
        summary(latencies, 1000, 2)
        if latencies
        else {"n": 0, "mean": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}
    )
    return {
        "matches": matches,
        "seats": matches * players,
        "players": players,
        "calls": calls,
        "batch_ms": batch_ms,
        # The opening: from the bots' launch until every match had been asked a first
        # decision (None: not within the limit), and how many had when the window opened.
        "opening_s": None if opening is None else round(opening - launched, 1),
        "matches_started_before_window": sum(p.get("holders_at_window") or 0 for p in parts),
        "client_processes": clients,
        "seconds": seconds,
        "decisions_per_s": round(decisions / seconds, 1),
        # Messages down all the seats' streams per decision (a seat not asked gets the
        # others' turns within the 20 ms batching bound: more messages when slow).
        "messages_per_decision": round(messages / decisions, 2) if decisions else None,
        "mean_ms": fig["mean"],
        "p50_ms": fig["p50"],
        "p90_ms": fig["p90"],
        "p99_ms": fig["p99"],
        "max_ms": fig["max"],
        # Matches with a decision in flight, on average (Little's law: throughput times
        # latency); the others were starting or ending.
        "matches_in_play": round(decisions / seconds * fig["mean"] / 1000, 1),
        "server_rss_mb": round(seen.peak_rss / 2**20, 1),
        "server_cpu_percent": seen.server_cpu,
        "bots_cpu_percent": seen.bots_cpu,
        # Ended matches stay in the server's memory a while: what each one adds.
        "rss_kb_per_ended_match": round((seen.end_rss - seen.start_rss) / 1024 / ended, 1)
        if ended
        else None,
        # What a seat costs: the server's memory when the window opens (every match
        # started and in play) over its memory before the first client came.
        "rss_kb_per_seat": round((seen.start_rss - idle_rss) / 1024 / (matches * players), 1),
        # Whether memory levels off: RSS through the window (seconds in, MB), and
        # what it grew in the window's second half.
        "rss_timeline_mb": [[round(t, 1), round(r / 2**20, 1)] for t, r in seen.timeline],
        "rss_growth_second_half_mb": _second_half_growth(seen.timeline),
        "errors": sum(p["errors"] for p in parts),
        "error_examples": sorted({e for p in parts for e in p["error_examples"]})[:5],
        "matches_finished": sum(p["matches_finished"] for p in parts),
        # CreateMatch sent -> first decision request: creating, joining and starting;
        # and the CreateMatch call alone.
        "match_start_p50_ms": start_fig["p50"],
        "match_start_p99_ms": start_fig["p99"],
        "create_match_p50_ms": create_fig["p50"],
        "create_match_p99_ms": create_fig["p99"],
        # The match's last decision request -> the last of its seats told it has ended.
        "match_end_p50_ms": end_fig["p50"],
        "match_end_p99_ms": end_fig["p99"],
        # How long a new call waits before the server takes it up, per method: a call
        # with an unknown seat token, timed until it is refused (p50).
        "play_refused_p50_ms": refusals.get("Play"),
        "join_refused_p50_ms": refusals.get("Join"),
    }


def _wait_for(directory: Path, what: str, clients: int, limit: float) -> float | None:
    """Returns when the last crowd wrote its ``what`` file (its calls are up: "opened";
    its matches in play: "ready"), waiting at most ``limit`` seconds (None if they did
    not all)."""
    ready = [directory / f"crowd-{i}.{what}" for i in range(clients)]
    give_up = time.time() + limit
    while time.time() < give_up:
        with contextlib.suppress(OSError, ValueError):
            return max(float(r.read_text(encoding="utf-8")) for r in ready)
        time.sleep(0.1)
    return None


@dataclass
class Watched:
    """The server's memory and the CPU use seen during a run."""

    peak_rss: int = 0  # bytes, until the end of the window
    start_rss: int = 0  # bytes, when the window opened
    end_rss: int = 0  # bytes, when it closed
    server_cpu: float = 0.0  # percent of one core, in the window
    bots_cpu: float = 0.0  # percent of one core, all bot processes, in the window
    timeline: list[tuple[float, int]] = field(default_factory=list)
    """(seconds into the window, bytes of RSS), every ``every`` seconds of the window."""


def _second_half_growth(timeline: Sequence[tuple[float, int]]) -> float | None:
    """Returns the MB the RSS grew from the window's middle to its end (None without
    samples)."""
    if len(timeline) < 2:
        return None
    middle = timeline[-1][0] / 2
    at_middle = next(r for t, r in timeline if t >= middle)
    return round((timeline[-1][1] - at_middle) / 2**20, 1)


def _watch(
    server: psutil.Process,
    bots: Sequence[psutil.Process],
    start_at: float,
    stop_at: float,
    every: float = 1.0,
) -> Watched:
    """Returns what the server's memory and the processes' CPU did until ``stop_at``
    (CPU from ``start_at`` on), sampling every 0.2 s, and the RSS every ``every``
    seconds of the window."""
    seen = Watched()
    begun: tuple[float, float, float] | None = None  # wall time, server CPU, bots' CPU
    while (now := time.time()) < stop_at:
        rss = server.memory_info().rss
        seen.peak_rss = max(seen.peak_rss, rss)
        if begun is None and now >= start_at:
            begun = (now, cpu_seconds([server]), cpu_seconds(bots))
            seen.start_rss = rss
        if now >= start_at and (
            not seen.timeline or now - start_at >= seen.timeline[-1][0] + every
        ):
            seen.timeline.append((now - start_at, rss))
        time.sleep(0.2)
    seen.end_rss = server.memory_info().rss
    seen.peak_rss = max(seen.peak_rss, seen.end_rss)
    seen.timeline.append((time.time() - start_at, seen.end_rss))
    if begun is not None:
        wall = time.time() - begun[0]
        seen.server_cpu = round(100 * (cpu_seconds([server]) - begun[1]) / wall, 1)
        seen.bots_cpu = round(100 * (cpu_seconds(bots) - begun[2]) / wall, 1)
    return seen


def _read(out: Path, log: str) -> dict[str, Any]:
    """Returns a crowd's figures; a crowd that wrote none counts as one error."""
    figures = written_figures(out)
    if figures is not None:
        return figures
    return {
        "decisions": 0,
        "latencies_us": [],
        "errors": 1,
        "matches_finished": 0,
        "error_examples": [f"crowd process wrote no figures: {output_end(Path(log))}"],
    }


def run(
    seats: int = TARGET_SEATS,
    steps: Sequence[int] = STEPS,
    *,
    players: int = 4,
    clients: int = 2,
    seconds: float = 15.0,
    step_seconds: float = 8.0,
    limit_ms: float = P99_LIMIT_MS,
    calls: str = "places",
    batch_ms: int = BATCH_MS,
) -> dict[str, Any]:
    """Returns the figures of the target (``seats`` seats) and of the step-up: each
    step's figures and the largest seat count up to which every step's p99 stayed
    under ``limit_ms`` with no error. Every step runs, whatever the ones before it
    measured."""
    target = measure(
        seats, players=players, clients=clients, seconds=seconds, calls=calls, batch_ms=batch_ms
    )
    stepped: list[dict[str, Any]] = []
    best = 0
    holding = True  # every step so far under the limit, without errors
    for n in steps:
        fig = (
            target
            if n == seats
            else measure(
                n,
                players=players,
                clients=clients,
                seconds=step_seconds,
                calls=calls,
                batch_ms=batch_ms,
            )
        )
        stepped.append(
            {
                k: fig[k]
                for k in (
                    "seats",
                    "decisions_per_s",
                    "p50_ms",
                    "p99_ms",
                    "server_rss_mb",
                    "server_cpu_percent",
                    "bots_cpu_percent",
                    "errors",
                    "matches_in_play",
                    "match_start_p50_ms",
                    "opening_s",
                )
            }
        )
        holding = holding and fig["p99_ms"] < limit_ms and not fig["errors"]
        if holding:
            best = fig["seats"]
    return {**target, "max_seats_p99_under_100ms": best, "p99_limit_ms": limit_ms, "steps": stepped}


def _ms(value: float | None) -> str:
    """Returns a time in ms as the table shows it: whole, or "-" when none was seen."""
    return "-" if value is None else f"{value:.0f}"


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures of ``run`` as the lines of a text table."""
    head = (
        f"{'seats':>6}{'decisions/s':>13}{'p50 ms':>9}{'p99 ms':>9}{'in play':>9}"
        f"{'start ms':>10}{'RSS MB':>9}{'server CPU %':>14}{'bots CPU %':>12}"
        f"{'errors':>8}"
    )
    lines = [head]
    for s in result["steps"]:
        lines.append(
            f"{s['seats']:>6}{s['decisions_per_s']:>13.0f}{s['p50_ms']:>9.1f}"
            f"{s['p99_ms']:>9.1f}{s['matches_in_play']:>9.1f}"
            f"{_ms(s['match_start_p50_ms']):>10}{s['server_rss_mb']:>9.1f}"
            f"{s['server_cpu_percent']:>14.0f}{s['bots_cpu_percent']:>12.0f}"
            f"{s['errors']:>8}"
        )
    lines.append(
        f"target {result['seats']} seats ({result['matches']} matches of "
        f"{result['players']}): {result['decisions_per_s']:.0f} decisions/s, "
        f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, "
        f"{result['server_rss_mb']} MB, {result['errors']} errors"
    )
    lines.append(
        f"matches in play on average: {result['matches_in_play']}; a new match took "
        f"{_ms(result['match_start_p50_ms'])} ms to start at p50 (CreateMatch "
        f"{_ms(result['create_match_p50_ms'])} ms) and "
        f"{_ms(result['match_end_p50_ms'])} ms to end; a new call is refused in "
        f"{result['play_refused_p50_ms']} ms for Play, "
        f"{result['join_refused_p50_ms']} ms for Join"
    )
    lines.append(
        f"memory: {result['rss_kb_per_seat']} KB a seat, "
        f"{result['rss_kb_per_ended_match']} KB an ended match; RSS (s, MB) "
        f"{result['rss_timeline_mb']}; grew "
        f"{result['rss_growth_second_half_mb']} MB in the window's second half"
    )
    lines.append(f"opening: {result['opening_s']} s until every match was in play")
    lines.append(
        f"largest seat count with p99 under {result['p99_limit_ms']:.0f} ms: "
        f"{result['max_seats_p99_under_100ms']}"
    )
    return lines


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark from the command line; returns its figures."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.load",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seats", type=int, default=TARGET_SEATS)
    parser.add_argument("--steps", type=int, nargs="*", default=list(STEPS))
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--clients", type=int, default=2, help="crowd processes")
    parser.add_argument("--seconds", type=float, default=15.0, help="window of the target")
    parser.add_argument("--step-seconds", type=float, default=8.0, help="window of a step")
    parser.add_argument(
        "--calls",
        choices=CALLS,
        default="places",
        help="each seat on one PlayMatches call for all its matches, a "
        "place each CreateMatch names (places) or sent a sit per match "
        "(matches), or on a new Play call per match (play)",
    )
    parser.add_argument(
        "--batch-ms",
        type=int,
        default=BATCH_MS,
        help="the batching bound every stream asks for, as the SDK's bots "
        "do (0: the server's 20 ms)",
    )
    args = parser.parse_args(argv)
    result = run(
        args.seats,
        args.steps,
        players=args.players,
        clients=args.clients,
        seconds=args.seconds,
        step_seconds=args.step_seconds,
        calls=args.calls,
        batch_ms=args.batch_ms,
    )
    print("\n".join(table(result)))
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
