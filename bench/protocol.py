"""Protocol overhead: one decision round trip through the server beside a bare gRPC one.

The server's round trip is measured on the Play stream of a two-seat match whose
two seats this client holds (one stream each, one connection), with the server in
its own process: from the moment a decision request arrives, through the answer
going up the stream and being applied, to the moment the next decision request
arrives (on either stream). The client answers at once (a random option), so the
figure is the server's answer path plus the transport.

The bare round trip is the same exchange with a minimal ``grpc.aio`` echo service
(``bench.echo``, its own process, the same 127.0.0.1 plaintext transport): the
client sends the same answer message and receives a real decision request's bytes
(the median-sized one of a played match). The client does the same work in both
(parse the request, pick an option, encode the answer), and both are measured in
alternating blocks of the same run, so background noise falls on both alike.

Between the two, the echo's Pair replays the server's pattern of messages with
nothing computed behind it (two streams; per answer the next request, with the
events before it, down the other stream, and an acknowledgement down the answering
one only if the server was seen sending one on its own), which splits the server's
round trip into the bare transport, the cost of its pattern of messages, and its
own work. ``answer_path``
times the server's answer path in-process, without gRPC, and the share of it spent
building the seat's view; ``play_path`` the whole of the server's Play handling
in-process (answers read, applied, journalled, the next request encoded and
streamed), which with the echo's Pair bounds the ratio from below.

``python -m bench.protocol`` prints a table; ``run()`` returns the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import grpc
import psutil

from mammamia_pb import arena_pb2 as pb

from . import echo
from .crowd import decision_in
from .latency import summary
from .serve import Server, python_module, stop, wait_for_port

TARGET_RATIO: Final = 1.3
"""The ratio at p50 of the server's round trip to the bare echo's that the server aims at."""
PLAY: Final = "/mammamia.v1.Seat/Play"
CREATE: Final = "/mammamia.v1.Organiser/CreateMatch"
DEADLINE_MS: Final = 60_000  # never reached: the client answers at once


def answer(decision: pb.DecisionRequest, rng: random.Random) -> bytes:
    """Returns the encoded Play message answering ``decision`` with a random option."""
    act = pb.ActRequest(
        decision_id=decision.decision_id, option=rng.randrange(len(decision.options))
    )
    return pb.PlayRequest(act=act).SerializeToString()


class _Measure:
    """Round-trip samples (ns) and the encoded decision requests seen."""

    def __init__(self) -> None:
        self.samples: list[int] = []
        self.requests: list[bytes] = []
        self.messages = 0  # every message received, decision requests included
        self.ack = b""  # a message that only acknowledges an answer, as sent
        self.acks_alone = 0  # how many such messages came


async def play_match(
    channel: grpc.aio.Channel, key: str, seed: int, rng: random.Random, into: _Measure
) -> None:
    """Plays one two-seat match holding both seats, adding a sample per decision after
    the first (request received -> next request received)."""
    create = channel.unary_unary(
        CREATE,
        request_serializer=pb.CreateMatchRequest.SerializeToString,
        response_deserializer=pb.CreateMatchResponse.FromString,
    )
    created = await create(
        pb.CreateMatchRequest(
            players=2, seed=seed, time_control=pb.TimeControl(deadline_ms=DEADLINE_MS)
        ),
        metadata=(("organiser-key", key),),
        timeout=10,
    )
    play: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(PLAY)
    last: list[int] = []  # arrival of the previous decision request, if any
    observe = pb.PlayRequest(observe=pb.ObserveRequest()).SerializeToString()

    async def seat(token: str) -> None:
        call = play(metadata=(("seat-token", token),))
        await call.write(observe)
        try:
            async for raw in call:
                now = time.perf_counter_ns()
                into.messages += 1
                events = pb.SeatEvents.FromString(raw).events
                kinds = {event.WhichOneof("event") for event in events}
                if kinds & {"act_result"} and not kinds & {"decision", "match_ended"}:
                    into.ack = raw  # sent on its own, not with a request
                    into.acks_alone += 1
                for event in events:
                    which = event.WhichOneof("event")
                    decision = decision_in(event)
                    if decision is not None:
                        if last:
                            into.samples.append(now - last[0])
                        last[:] = [now]
                        into.requests.append(raw)
                        await call.write(answer(decision, rng))
                    elif which == "match_ended":
                        return
                    elif which == "act_result" and not event.act_result.accepted:
                        raise RuntimeError(f"answer refused: {event.act_result.message}")
        finally:
            call.cancel()

    await asyncio.wait_for(asyncio.gather(*(seat(t) for t in created.seat_tokens)), 120)


async def echo_round_trips(
    channel: grpc.aio.Channel, count: int, rng: random.Random, into: _Measure
) -> None:
    """Adds ``count`` samples of the bare echo round trip."""
    echoes: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(echo.METHOD)
    call = echoes()
    # The first message names no real decision; every later one answers the reply.
    await call.write(
        pb.PlayRequest(act=pb.ActRequest(decision_id="d1", option=0)).SerializeToString()
    )
    last = 0
    taken = -1
    try:
        async for raw in call:
            now = time.perf_counter_ns()
            [*_, event] = pb.SeatEvents.FromString(raw).events
            if taken >= 0:
                into.samples.append(now - last)
            last = now
            taken += 1
            if taken >= count:
                return
            await call.write(answer(event.decision, rng))
    finally:
        call.cancel()


def _cpu_ns(process: psutil.Process) -> int:
    times = process.cpu_times()
    return int((times.user + times.system) * 1e9)


async def pair_round_trips(
    channel: grpc.aio.Channel, count: int, rng: random.Random, into: _Measure, key: str
) -> None:
    """Adds ``count`` samples of the echo's Pair: the server's pattern of messages
    (two streams, the request to one, the act result to the other) with nothing
    computed behind it."""
    play: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(echo.PAIR)
    observe = pb.PlayRequest(observe=pb.ObserveRequest()).SerializeToString()
    last: list[int] = []
    enough = asyncio.Event()
    goal = len(into.samples) + count

    async def seat() -> None:
        call = play(metadata=(("pair", key),))
        await call.write(observe)
        try:
            async for raw in call:
                now = time.perf_counter_ns()
                into.messages += 1
                [*_, event] = pb.SeatEvents.FromString(raw).events
                if event.WhichOneof("event") == "decision":
                    if last:
                        into.samples.append(now - last[0])
                    last[:] = [now]
                    if len(into.samples) >= goal:
                        enough.set()
                        return
                    await call.write(answer(event.decision, rng))
        finally:
            call.cancel()

    seats = [asyncio.ensure_future(seat()) for _ in range(2)]
    try:
        await asyncio.wait_for(enough.wait(), 120)
    finally:
        for task in seats:
            task.cancel()
        await asyncio.gather(*seats, return_exceptions=True)


async def _answer_path(seconds: float, seed: int) -> dict[str, float]:
    from structlog.testing import capture_logs

    from mammamia import view_of
    from server.db.matches import Storage
    from server.runners import Runners

    rng = random.Random(seed)
    answer_ns = view_ns = decisions = 0
    with tempfile.TemporaryDirectory(prefix="bench-answer-") as tmp, capture_logs():
        runners = Runners(Storage(Path(tmp) / "bench.db"), deadline_ms=DEADLINE_MS)
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            runner = runners.create_match(2, seed=rng.randrange(2**62))
            runner.join(0)
            runner.join(1)
            match = runner.match
            while match.decision is None:  # the match starts on the loop
                await asyncio.sleep(0)
            while (d := match.decision) is not None:
                start = time.perf_counter_ns()
                view_of(match.state, d.seat, history=False)  # as Match asks it
                middle = time.perf_counter_ns()
                runner.answer(d.seat, d.id, rng.randrange(len(d.options)), None)
                answer_ns += time.perf_counter_ns() - middle
                view_ns += middle - start
                decisions += 1
            await runner.result()
        runners.storage.close()
    return {
        "decisions": decisions,
        "answer_us": round(answer_ns / decisions / 1000, 1),
        "view_of_us": round(view_ns / decisions / 1000, 1),
    }


def answer_path(seconds: float = 2.0, seed: int = 0) -> dict[str, float]:
    """Returns the server's answer path measured in-process, without gRPC: the mean µs
    per decision of ``Runner.answer`` (check the answer, apply it, ask the
    next decision: view, event log, waking the streams) and of the ``mammamia.view_of``
    call its match makes (the view without its history)."""
    return asyncio.run(_answer_path(seconds, seed))


class _Answers:
    """The client's side of an in-process Play call: the answers it sends, in order."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[pb.PlayRequest] = asyncio.Queue()

    def __aiter__(self) -> _Answers:
        return self

    async def __anext__(self) -> pb.PlayRequest:
        return await self.queue.get()


async def _play_seat(
    runner: Any, number: int, rng: random.Random, last: list[int], into: dict[str, Any]
) -> None:
    from server.seating import PlayCall
    from server.streams import holding

    answers = _Answers()
    runner.join(number)
    call = PlayCall(answers, 8, "Play")
    try:
        async for raw in call.sit(runner, number, 0, holding(0)):
            now = time.perf_counter_ns()
            sent = []
            for event in pb.SeatEvents.FromString(raw).events:
                decision = decision_in(event)
                if decision is not None:
                    if last:
                        into["samples"].append(now - last[0])
                    last[:] = [now]
                    sent.append(answer(decision, rng))
            into["client_ns"] += time.perf_counter_ns() - now
            for message in sent:  # parsed as gRPC would, on the server's side
                answers.queue.put_nowait(pb.PlayRequest.FromString(message))
    finally:
        call.close()


async def _play_path(seconds: float, seed: int, players: int) -> dict[str, float]:
    from structlog.testing import capture_logs

    from server.db.matches import Storage
    from server.runners import Runners

    rng = random.Random(seed)
    into: dict[str, Any] = {"samples": [], "client_ns": 0}
    with tempfile.TemporaryDirectory(prefix="bench-play-") as tmp, capture_logs():
        runners = Runners(Storage(Path(tmp) / "bench.db"), deadline_ms=DEADLINE_MS)
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            runner = runners.create_match(players, seed=rng.randrange(2**62))
            last: list[int] = []
            await asyncio.gather(*(_play_seat(runner, n, rng, last, into) for n in range(players)))
            await runner.result()
        runners.storage.close()
    figures = summary(into["samples"], 1000)
    return {
        "decisions": figures["n"],
        "p50_us": figures["p50"],
        "mean_us": figures["mean"],
        "client_us": round(into["client_ns"] / max(1, figures["n"]) / 1000, 1),
    }


def play_path(seconds: float = 2.0, seed: int = 0, players: int = 2) -> dict[str, float]:
    """Returns the server's whole Play path measured in-process, without gRPC: the
    round trip (µs, p50 and mean) between two decision requests of a match of
    ``players`` seats (two, as the round trip above; four, as the load benchmark's)
    whose answers reach the server's own Play call handling (``server.seating.PlayCall``:
    its reader, the match's runner, the journal, and the seat's stream in
    ``server.streams`` with its encoding) from memory,
    and ``client_us``, the mean µs of it the in-process client spends parsing each
    message and encoding its answer (as the benchmark's gRPC client does)."""
    return asyncio.run(_play_path(seconds, seed, players))


async def _measure(
    server: str,
    server_pid: int,
    key: str,
    reply_file: Path,
    port_file: Path,
    samples: int,
    blocks: int,
    seed: int,
) -> dict[str, Any]:
    rng = random.Random(seed)
    real, bare, pattern = _Measure(), _Measure(), _Measure()
    server_cpu = bare_cpu = 0  # CPU time each server process spent in the measured blocks
    server_process = psutil.Process(server_pid)
    async with grpc.aio.insecure_channel(server) as channel:
        # A warm-up match, whose median request becomes the echo's reply; the echo's
        # Pair also sends an acknowledgement of its own if the server mostly does.
        warm = _Measure()
        await play_match(channel, key, seed, rng, warm)
        median = sorted(warm.requests, key=len)[len(warm.requests) // 2]
        reply_file.write_bytes(median)
        acks = []
        if warm.acks_alone > len(warm.requests) / 2:
            ack_file = reply_file.with_suffix(".ack")
            ack_file.write_bytes(warm.ack)
            acks = ["--ack", str(ack_file)]
        echo_process = python_module(
            "bench.echo", "--port-file", str(port_file), "--reply", str(reply_file), *acks
        )
        try:
            port = wait_for_port(port_file, echo_process)
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as bare_channel:
                await echo_round_trips(bare_channel, 200, rng, _Measure())  # warm-up
                echo_server = psutil.Process(echo_process.pid)
                per_block = max(1, samples // blocks)
                match = 1
                for block in range(blocks):
                    before = _cpu_ns(echo_server)
                    await echo_round_trips(bare_channel, per_block, rng, bare)
                    bare_cpu += _cpu_ns(echo_server) - before
                    await pair_round_trips(bare_channel, per_block, rng, pattern, f"b{block}")
                    goal = len(real.samples) + per_block
                    before = _cpu_ns(server_process)
                    while len(real.samples) < goal:
                        await play_match(channel, key, seed + match, rng, real)
                        match += 1
                    server_cpu += _cpu_ns(server_process) - before
        finally:
            stop(echo_process)
    sizes = sorted(len(r) for r in real.requests)
    server_fig = summary(real.samples, 1000)
    bare_fig = summary(bare.samples, 1000)
    pattern_fig = summary(pattern.samples, 1000)
    return {
        "bare_mean_us": bare_fig["mean"],
        "bare_p50_us": bare_fig["p50"],
        "bare_p99_us": bare_fig["p99"],
        "server_mean_us": server_fig["mean"],
        "server_p50_us": server_fig["p50"],
        "server_p99_us": server_fig["p99"],
        "ratio_p50": round(server_fig["p50"] / bare_fig["p50"], 2),
        "ratio_mean": round(server_fig["mean"] / bare_fig["mean"], 2),
        "target_ratio": TARGET_RATIO,
        # The server's pattern of messages (echo Pair) without the server behind it.
        "pattern_p50_us": pattern_fig["p50"],
        "pattern_p99_us": pattern_fig["p99"],
        "pattern_messages_per_request": round(pattern.messages / (pattern_fig["n"] + 1), 2),
        "samples": {"bare": bare_fig["n"], "server": server_fig["n"], "pattern": pattern_fig["n"]},
        "matches": match - 1,
        "request_bytes": {
            "median": sizes[len(sizes) // 2],
            "max": sizes[-1],
            "echo_reply": len(median),
        },
        "answer_bytes": len(answer(pb.SeatEvents.FromString(median).events[-1].decision, rng)),
        # Why the server's round trip costs more: what it sends per decision, and the
        # CPU time its process spends per decision (matches created and stored included).
        "server_messages_per_decision": round(real.messages / len(real.requests), 2),
        "server_cpu_us_per_decision": round(server_cpu / len(real.requests) / 1000, 1),
        "bare_cpu_us_per_round_trip": round(bare_cpu / len(bare.samples) / 1000, 1),
        "bare": bare_fig,
        "server": server_fig,
        "pattern": pattern_fig,
    }


def run(
    samples: int = 6000, blocks: int = 5, seed: int = 1, answer_seconds: float = 2.0
) -> dict[str, Any]:
    """Returns the round-trip figures (µs) of the server and of the bare echo, and the
    ratio at p50, from about ``samples`` round trips of each in ``blocks`` alternations;
    and, under ``answer_path`` and ``play_path`` (``play_path_4``: in four-seat
    matches), the server's own Python in a decision."""
    with tempfile.TemporaryDirectory(prefix="bench-protocol-") as tmp:
        directory = Path(tmp)
        with Server(directory) as server:
            result = asyncio.run(
                _measure(
                    server.address,
                    server.pid,
                    server.organiser_key,
                    directory / "reply.bin",
                    directory / "echo.port",
                    samples,
                    blocks,
                    seed,
                )
            )
    result["answer_path"] = answer_path(answer_seconds, seed)
    result["play_path"] = play_path(answer_seconds, seed)
    result["play_path_4"] = play_path(answer_seconds, seed, players=4)
    return result


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures of ``run`` as the lines of a text table."""
    lines = [f"{'round trip':<26}{'mean µs':>9}{'p50 µs':>9}{'p99 µs':>9}{'samples':>9}"]
    for label, key in (
        ("bare grpc.aio echo", "bare"),
        ("echo, server's messages", "pattern"),
        ("server Play (2 seats)", "server"),
    ):
        f = result[key]
        lines.append(f"{label:<26}{f['mean']:>9.1f}{f['p50']:>9.1f}{f['p99']:>9.1f}{f['n']:>9}")
    verdict = "meets" if result["ratio_p50"] <= result["target_ratio"] else "misses"
    lines.append(
        f"ratio at p50: {result['ratio_p50']:.2f} ({verdict} the target of "
        f"{result['target_ratio']}); request {result['request_bytes']['median']} B, "
        f"answer {result['answer_bytes']} B"
    )
    lines.append(
        f"server: {result['server_messages_per_decision']} messages and "
        f"{result['server_cpu_us_per_decision']} µs CPU per decision; echo: 1 message "
        f"and {result['bare_cpu_us_per_round_trip']} µs CPU per round trip"
    )
    bare, pattern, server = (
        result["bare_p50_us"],
        result["pattern_p50_us"],
        result["server_p50_us"],
    )
    lines.append(
        f"at p50: {bare:.0f} µs bare transport + {pattern - bare:.0f} µs for the "
        f"server's extra messages + {server - pattern:.0f} µs of the server's own work"
    )
    path = result["answer_path"]
    lines.append(
        f"answer path in-process (no gRPC): {path['answer_us']} µs per decision, "
        f"of which mammamia.view_of {path['view_of_us']} µs"
    )
    play = result["play_path"]
    server_part = play["p50_us"] - play["client_us"]
    lines.append(
        f"whole Play path in-process (no gRPC): {play['p50_us']:.0f} µs at p50, "
        f"{play['client_us']:.0f} µs of it the client's; with the server's "
        f"messages, a ratio of at least {(pattern + server_part) / bare:.2f}"
    )
    four = result["play_path_4"]
    lines.append(
        f"the same in four-seat matches (the load benchmark's): {four['p50_us']:.0f} µs "
        f"at p50, {four['client_us']:.0f} µs of it the client's"
    )
    return lines


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark from the command line; returns its figures."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.protocol",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--samples", type=int, default=6000, help="round trips of each kind")
    parser.add_argument("--blocks", type=int, default=5, help="alternations echo/server")
    args = parser.parse_args(argv)
    result = run(args.samples, args.blocks)
    print("\n".join(table(result)))
    return result


if __name__ == "__main__":
    main()
