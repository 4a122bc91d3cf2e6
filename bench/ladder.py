"""Ladder: matches completed per minute with random bots, and the cost of one rating update.

The throughput run starts ``mammamia serve`` with its ladder (players 2-5, the
default concurrency of 4 matches at once) and enters random bots exactly as a
bot author would, each its own ``mammamia bot random --ladder`` process. After a
warm-up it reads the ladder's count of finished, rated matches (Ladder.Standings)
at the start and at the end of a window; the difference per minute is the figure.
Matches the server aborted in the window (Organiser.ListMatches) are counted as
errors.

The rating update is measured in-process: ``server.ladder.ratings.rate`` (OpenSkill's
Plackett-Luce model) for a five-player match, with random ratings and ranks (ties
included), over many repetitions.

``python -m bench.ladder`` prints a table; ``run()`` returns the figures.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Final

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .latency import summary
from .serve import Server, mammamia, stop

FIRST_MATCH_TIMEOUT: Final = 60.0


def rating_update(players: int = 5, repetitions: int = 2000, seed: int = 0) -> dict[str, float]:
    """Returns the time of one rating update of a ``players``-seat match (ms: mean, p50,
    p99) over ``repetitions`` updates with random ratings and ranks."""
    from server.ladder.ratings import Rating, rate

    rng = random.Random(seed)
    cases = []
    for _ in range(repetitions):
        ratings = [Rating(rng.uniform(10, 40), rng.uniform(1, 25 / 3)) for _ in range(players)]
        ranks = sorted(rng.randint(1, players) for _ in range(players))  # ties included
        rng.shuffle(ranks)
        cases.append((ratings, ranks))
    rate(*cases[0])  # build the model once, as a running ladder has
    samples = []
    for ratings, ranks in cases:
        start = time.perf_counter_ns()
        rate(ratings, ranks)
        samples.append(time.perf_counter_ns() - start)
    fig = summary(samples, 1e6, 3)
    return {
        "players": players,
        "repetitions": repetitions,
        "mean_ms": fig["mean"],
        "p50_ms": fig["p50"],
        "p99_ms": fig["p99"],
    }


def _finished(stub: pb_grpc.LadderStub) -> int:
    return int(stub.Standings(pb.StandingsRequest(), timeout=10).matches_finished)


def _aborted(server: Server) -> int:
    aborted, token = 0, ""
    with grpc.insecure_channel(server.address) as channel:
        while True:  # every page
            listed = pb_grpc.OrganiserStub(channel).ListMatches(
                pb.ListMatchesRequest(page_size=1000, page_token=token),
                timeout=10,
                metadata=(("organiser-key", server.organiser_key),),
            )
            aborted += sum(
                1 for m in listed.matches if m.ladder and m.status == pb.MATCH_STATUS_ABORTED
            )
            token = listed.next_page_token
            if not token:
                return aborted


def throughput(
    bots: int = 12,
    seconds: float = 40.0,
    warmup: float = 5.0,
    players: str = "2-5",
    concurrency: int = 4,
    db: str | None = None,
) -> dict[str, Any]:
    """Returns the ladder matches finished per minute over ``seconds``, with ``bots``
    random bots entered, after the first match has finished and ``warmup`` more
    seconds have passed. ``db`` is the server's database (a new, empty one: a
    ``postgresql://`` URL); None: a new SQLite file."""
    with tempfile.TemporaryDirectory(prefix="bench-ladder-") as tmp:
        directory = Path(tmp)
        with Server(
            directory,
            "--ladder-players",
            players,
            "--ladder-concurrency",
            str(concurrency),
            *(("--db", db) if db else ()),
        ) as server:
            entrants: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
            try:
                for i in range(bots):
                    name = f"random-{i + 1}"
                    log: IO[bytes] = open(directory / f"{name}.log", "wb")  # noqa: SIM115 (closed below)
                    entrants.append(
                        (
                            subprocess.Popen(
                                [
                                    *mammamia(),
                                    "bot",
                                    "random",
                                    "--server",
                                    server.address,
                                    "--ladder",
                                    "--name",
                                    name,
                                    "--key-file",
                                    str(directory / f"{name}.key"),
                                    "--log-format",
                                    "json",
                                ],
                                stdout=log,
                                stderr=subprocess.STDOUT,
                                cwd=directory,
                            ),
                            log,
                        )
                    )
                with grpc.insecure_channel(server.address) as channel:
                    stub = pb_grpc.LadderStub(channel)
                    give_up = time.monotonic() + FIRST_MATCH_TIMEOUT
                    while _finished(stub) == 0:
                        if time.monotonic() > give_up:
                            raise RuntimeError(
                                f"no ladder match finished within {FIRST_MATCH_TIMEOUT:.0f} s"
                            )
                        time.sleep(0.2)
                    time.sleep(warmup)
                    aborted_before = _aborted(server)
                    first, started = _finished(stub), time.monotonic()
                    time.sleep(seconds)
                    last, ended = _finished(stub), time.monotonic()
                aborted = _aborted(server) - aborted_before
            finally:
                for process, log in entrants:
                    stop(process, 10)
                    log.close()
    minutes = (ended - started) / 60
    return {
        "bots": bots,
        "players": players,
        "concurrency": concurrency,
        "seconds": round(ended - started, 1),
        "matches": last - first,
        "matches_per_min": round((last - first) / minutes, 1),
        "aborted": aborted,
    }


def run(
    bots: int = 12,
    seconds: float = 40.0,
    warmup: float = 5.0,
    concurrency: int = 4,
    repetitions: int = 2000,
    db: str | None = None,
) -> dict[str, Any]:
    """Returns the ladder's throughput and the rating update's time."""
    flow = throughput(bots, seconds, warmup, concurrency=concurrency, db=db)
    update = rating_update(5, repetitions)
    # The median: a rare update stretched by the collector or a busy machine says
    # nothing of the model's cost (the mean and p99 stay in "rating_update").
    return {
        "matches_per_min": flow["matches_per_min"],
        "rating_update_ms": update["p50_ms"],
        "throughput": flow,
        "rating_update": update,
    }


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures of ``run`` as the lines of a text table."""
    flow, update = result["throughput"], result["rating_update"]
    return [
        f"matches per minute: {flow['matches_per_min']:.1f} ({flow['matches']} in "
        f"{flow['seconds']} s; {flow['bots']} random bots, {flow['players']} players, "
        f"{flow['concurrency']} at once; {flow['aborted']} aborted)",
        f"rating update, {update['players']} players: mean {update['mean_ms']:.3f} ms, "
        f"p50 {update['p50_ms']:.3f} ms, p99 {update['p99_ms']:.3f} ms "
        f"({update['repetitions']} updates)",
    ]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark from the command line; returns its figures."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.ladder",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--bots", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repetitions", type=int, default=2000)
    parser.add_argument(
        "--db",
        metavar="URL",
        help="the server's database: an empty "
        "PostgreSQL database's postgresql:// URL (default: a new SQLite file)",
    )
    args = parser.parse_args(argv)
    result = run(
        args.bots,
        args.seconds,
        concurrency=args.concurrency,
        repetitions=args.repetitions,
        db=args.db,
    )
    print("\n".join(table(result)))
    return result


if __name__ == "__main__":
    main()
