"""What the Prometheus metrics cost a decision (``server.metrics``).

Two figures, in-process and without gRPC:

- ``answer_us``: the server's answer path (``Runner.answer``: check, apply, journal,
  ask the next decision), as ``bench.protocol``'s ``answer_path`` times it, with the
  metrics counted and without; rounds of each alternate, so that the machine's drift
  falls on both alike. The difference is what counting costs a decision: the answer's
  time observed for its bot, and the journal's write timed.
- ``answered_us``: one ``Metrics.answered`` call alone (a ladder bot's answer:
  its label looked up, one histogram observation, its page's figures).

``python -m bench.metrics [--seconds S]``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from server.metrics import Metrics

DEADLINE_MS = 600_000  # no deadline passes while the path is timed


async def _answers(seconds: float, seed: int, counted: bool) -> tuple[int, int]:
    """Returns (decisions, CPU ns in Runner.answer) over ``seconds`` of two-seat ladder
    matches (CPU time of the thread: other processes on the machine do not count)."""
    from structlog.testing import capture_logs

    from server.db.matches import Storage
    from server.runners import Runners

    rng = random.Random(seed)
    spent = decisions = 0
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as tmp, capture_logs():
        runners = Runners(
            Storage(Path(tmp) / "bench.db"),
            deadline_ms=DEADLINE_MS,
            metrics=Metrics() if counted else None,
        )
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            runner = runners.create_match(
                2, seed=rng.randrange(2**62), names=["ada", "bob"], ladder=True
            )
            runner.join(0)
            runner.join(1)
            match = runner.match
            while match.decision is None:  # the match starts on the loop
                await asyncio.sleep(0)
            while (d := match.decision) is not None:
                start = time.thread_time_ns()
                runner.answer(d.seat, d.id, rng.randrange(len(d.options)), None)
                spent += time.thread_time_ns() - start
                decisions += 1
            await runner.result()
        runners.storage.close()
    return decisions, spent


def answered_us(calls: int = 200_000) -> float:
    """Returns the mean µs of one ``Metrics.answered`` call for a ladder bot."""
    metrics = Metrics()
    names = [f"bot-{i}" for i in range(50)]
    start = time.thread_time_ns()
    for i in range(calls):
        metrics.answered(names[i % 50], True, 0.01)
    return round((time.thread_time_ns() - start) / calls / 1000, 2)


def run(seconds: float = 6.0, rounds: int = 6, seed: int = 0) -> dict[str, Any]:
    """Returns the answer path's CPU µs per decision with and without the metrics (the
    median of ``rounds`` alternating rounds of ``seconds / rounds`` each, after a
    warm-up), their difference, and ``answered_us``."""
    each = seconds / rounds
    asyncio.run(_answers(min(each, 0.5), seed, True))  # warm-up: imports, first files
    without: list[float] = []
    counted: list[float] = []
    for r in range(rounds):
        for flag, into in ((False, without), (True, counted)):
            n, ns = asyncio.run(_answers(each, seed + r, flag))
            into.append(ns / n / 1000)
    bare = statistics.median(without)
    timed = statistics.median(counted)
    bare, timed = round(bare, 1), round(timed, 1)
    return {
        "answer_us_without": bare,
        "answer_us_with": timed,
        "cost_us": round(timed - bare, 1),
        "answered_us": answered_us(),
        "rounds": rounds,
    }


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures as lines."""
    return [
        f"answer path, µs per decision: {result['answer_us_without']} without the "
        f"metrics, {result['answer_us_with']} with (+{result['cost_us']})",
        f"Metrics.answered alone: {result['answered_us']} µs",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.metrics", description=__doc__)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    print("\n".join(table(run(args.seconds, args.rounds))))


if __name__ == "__main__":
    main()
