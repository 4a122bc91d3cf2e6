"""The transport's ceiling under load: the load benchmark's closed loop with no server.

``bench.load`` plays 250 matches (1,000 seats) at once, each waiting on one decision
at a time, and measures the decision latency: from one decision request of a match
reaching its bot to the match's next one. This benchmark runs the same closed loop
against the bare echo (``bench.echo``, on uvloop as the arena server is): one
bidirectional stream per match, each with one message in flight; every reply is a
real encoded decision request (with the events a seat receives before it), which
the client parses, answers with a random option and encodes, exactly as the load
benchmark's bots do (``bench.crowd``), in as many client processes, one connection
each. Nothing is computed behind the transport, so the figures are what the
machine allows any Python gRPC server: a load target below them cannot be met by
the arena server's own work, however small.

For each stream count (``--streams``; 250 is the load target's matches in play) it
reports round trips a second, the latency at p50 and p99 (the load benchmark's
decision latency), and the CPU the echo and the clients used per round trip.
``python -m bench.ceiling`` prints a table; ``run()`` returns the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import grpc
import psutil

from mammamia import new_game
from mammamia_pb import arena_pb2 as pb
from server import visibility, wire
from server.match import Match, Settings

from . import echo
from .crowd import decision_in
from .latency import summary
from .serve import cpu_seconds, output_end, python_module, stop, wait_for_port, written_figures

STREAMS: Final = (100, 250, 500, 1000)  # matches in play at 400, 1,000, 2,000, 4,000 seats
TARGET_STREAMS: Final = 250
P99_TARGET_MS: Final = 50.0  # the load target's p99 at 1,000 seats
CLIENT_GRACE: Final = 30.0


def seat_message(players: int = 4, seed: int = 0) -> bytes:
    """Returns the median-sized message a seat receives with its decision requests in a
    game played with random answers: the request and the public events since the
    seat's previous one, encoded by the server's own ``server.wire``."""
    match = Match("m-ceiling", new_game(players, seed), seed, Settings(), 0.0)
    for seat in range(players):
        match.join(seat)
    match.start(0.0)
    rng = random.Random(seed)
    messages: list[bytes] = []
    seen = 0  # log entries already sent to seat 0
    while (asked := match.decision) is not None:
        if asked.seat == 0:
            items = [visibility.item(match, entry, 0) for entry in match.log[seen:]]
            # A stream's message is its SeatEvents.events entries, one after another.
            messages.append(
                b"".join(wire.stream_entry(item, match, 0.0) for item in items if item is not None)
            )
            seen = len(match.log)
        match.answer(asked.seat, asked.id, rng.randrange(len(asked.options)), None, 1.0)
    messages.sort(key=len)
    return messages[len(messages) // 2]


async def _client(
    address: str, streams: int, start_at: float, stop_at: float, seed: int
) -> dict[str, Any]:
    """Runs ``streams`` closed-loop streams on one connection until ``stop_at``; returns
    the round trips (µs) that ended inside the window starting at ``start_at``."""
    latencies: list[int] = []
    errors: list[str] = []
    rng = random.Random(seed)
    options = [("grpc.use_local_subchannel_pool", 1)]  # a connection of its own
    async with grpc.aio.insecure_channel(address, options=options) as channel:
        method: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(
            echo.METHOD
        )

        async def stream() -> None:
            call = method()
            # The first message answers nothing; every later one answers the reply.
            first = pb.PlayRequest(act=pb.ActRequest(decision_id="d0", option=0))
            await call.write(first.SerializeToString())
            last = time.perf_counter_ns()
            try:
                while time.time() < stop_at:
                    raw = await call.read()
                    if not isinstance(raw, bytes):
                        errors.append("the echo closed a stream")
                        return
                    now = time.perf_counter_ns()
                    if time.time() >= start_at:
                        latencies.append((now - last) // 1000)
                    last = now
                    # The bots' work on a message (bench.crowd): parse, choose, encode.
                    for event in pb.SeatEvents.FromString(raw).events:
                        d = decision_in(event)
                        if d is not None:
                            act = pb.ActRequest(
                                decision_id=d.decision_id, option=rng.randrange(len(d.options))
                            )
                            await call.write(pb.PlayRequest(act=act).SerializeToString())
            except grpc.aio.AioRpcError as e:
                errors.append(f"Echo: {e.code().name}: {e.details()}")
            finally:
                call.cancel()

        await asyncio.gather(*(stream() for _ in range(streams)))
    return {"latencies_us": latencies, "errors": errors}


def measure(
    streams: int, *, clients: int = 2, seconds: float = 10.0, warmup: float = 3.0, seed: int = 0
) -> dict[str, Any]:
    """Returns the figures of ``streams`` closed-loop streams against the bare echo,
    shared by ``clients`` processes: a warm-up of ``warmup`` seconds, then
    ``seconds`` of measurement."""
    clients = max(1, min(clients, streams))
    with tempfile.TemporaryDirectory(prefix="bench-ceiling-") as tmp:
        directory = Path(tmp)
        reply = directory / "reply.bin"
        reply.write_bytes(seat_message(seed=seed))
        port_file = directory / "port"
        server = python_module(
            "bench.echo",
            "--port-file",
            str(port_file),
            "--reply",
            str(reply),
            "--event-loop",
            "uvloop",
        )
        try:
            address = f"127.0.0.1:{wait_for_port(port_file, server)}"
            start_at = time.time() + 1.0 + warmup
            stop_at = start_at + seconds
            parts = []
            for i in range(clients):
                share = streams // clients + (i < streams % clients)
                out = directory / f"client-{i}.json"
                log = open(directory / f"client-{i}.log", "wb")  # noqa: SIM115 (closed below)
                parts.append(
                    (
                        out,
                        log,
                        python_module(
                            "bench.ceiling",
                            "client",
                            "--server",
                            address,
                            "--streams",
                            str(share),
                            "--start-at",
                            str(start_at),
                            "--stop-at",
                            str(stop_at),
                            "--seed",
                            str(seed + i),
                            "--out",
                            str(out),
                            log=log,
                        ),
                    )
                )
            echo_process = psutil.Process(server.pid)
            client_processes = [psutil.Process(p.pid) for _, _, p in parts]
            time.sleep(max(0.0, start_at - time.time()))
            before = [cpu_seconds([echo_process]), cpu_seconds(client_processes)]
            time.sleep(max(0.0, stop_at - time.time()))
            after = [cpu_seconds([echo_process]), cpu_seconds(client_processes)]
            for _, log, process in parts:
                try:
                    process.wait(CLIENT_GRACE)
                except subprocess.TimeoutExpired:
                    stop(process, 5)
                log.close()
            results = [_figures(out, Path(log.name)) for out, log, _ in parts]
        finally:
            stop(server)
    latencies = [x for r in results for x in r["latencies_us"]]
    errors = [e for r in results for e in r["errors"]]
    used = [a - b for a, b in zip(after, before, strict=True)]
    trips = len(latencies)
    fig = summary(latencies, 1000, 2) if latencies else {"p50": None, "p99": None}
    return {
        "streams": streams,
        "client_processes": clients,
        "seconds": seconds,
        "round_trips_per_second": round(trips / seconds),
        "p50_ms": fig["p50"],
        "p99_ms": fig["p99"],
        "echo_cpu_us_per_round_trip": round(used[0] / trips * 1e6, 1) if trips else None,
        "clients_cpu_us_per_round_trip": round(used[1] / trips * 1e6, 1) if trips else None,
        "errors": len(errors),
        "error_samples": errors[:5],
    }


def _figures(out: Path, log: Path) -> dict[str, Any]:
    """Returns a client's figures; raises RuntimeError, quoting the end of its output,
    when it wrote none."""
    figures = written_figures(out)
    if figures is None:
        raise RuntimeError(
            f"a client wrote no figures ({out.name}); its output ends:\n{output_end(log, 2000)}"
        )
    return figures


def run(
    streams: Sequence[int] = STREAMS,
    seconds: float = 8.0,
    clients: int = 2,
    seed: int = 0,
    warmup: float = 3.0,
) -> dict[str, Any]:
    """Returns the figures of each stream count under ``steps`` (an echo server each),
    and those of the load target's 250 streams (when measured) under ``target``."""
    steps = [
        measure(n, clients=clients, seconds=seconds, warmup=warmup, seed=seed) for n in streams
    ]
    target = next((s for s in steps if s["streams"] == TARGET_STREAMS), None)
    return {
        "unit": "closed-loop round trips through the bare echo, one in flight a stream",
        "steps": steps,
        "target": target,
        "target_p99_under_50ms": None
        if target is None or target["p99_ms"] is None
        else target["p99_ms"] <= P99_TARGET_MS,
        "load_average": [round(x, 2) for x in psutil.getloadavg()],
    }


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures of ``run`` as the lines of a text table."""
    lines = [
        f"{'streams':>7}  {'round trips/s':>13}  {'p50 ms':>7}  {'p99 ms':>7}  "
        f"{'echo CPU µs':>11}  {'clients CPU µs':>14}  {'errors':>6}"
    ]
    for s in result["steps"]:
        lines.append(
            f"{s['streams']:>7}  {s['round_trips_per_second']:>13,}  "
            f"{s['p50_ms']!s:>7}  {s['p99_ms']!s:>7}  "
            f"{s['echo_cpu_us_per_round_trip']!s:>11}  "
            f"{s['clients_cpu_us_per_round_trip']!s:>14}  {s['errors']:>6}"
        )
    lines.append(
        f"(a stream is a match in play: 250 at 1,000 seats; CPU per round trip; "
        f"load average {result['load_average']})"
    )
    return lines


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark (or, as ``client``, one of its client processes) from the
    command line; returns its figures."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.ceiling",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command")
    client = sub.add_parser("client", help="one client process (started by the benchmark)")
    client.add_argument("--server", required=True)
    client.add_argument("--streams", type=int, required=True)
    client.add_argument("--start-at", type=float, required=True, help="UNIX time")
    client.add_argument("--stop-at", type=float, required=True, help="UNIX time")
    client.add_argument("--seed", type=int, default=0)
    client.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--streams",
        type=int,
        nargs="+",
        default=list(STREAMS),
        help="stream counts to measure, one echo server each",
    )
    parser.add_argument("--seconds", type=float, default=8.0, help="window of each count")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    args = parser.parse_args(argv)
    if args.command == "client":
        figures = asyncio.run(
            _client(args.server, args.streams, args.start_at, args.stop_at, args.seed)
        )
        args.out.write_text(json.dumps(figures), encoding="utf-8")
        return figures
    result = run(args.streams, args.seconds, args.clients)
    print("\n".join(table(result)))
    return result


if __name__ == "__main__":
    main()
