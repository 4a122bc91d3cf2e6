"""A crowd of bots in one process: many matches, every seat on its own Play stream.

``python -m bench.crowd --server ADDR --organiser-key KEY --matches M --start-at T
--stop-at U --out FILE`` keeps ``M`` matches of ``--players`` seats running on the
server until the wall-clock time ``U``: it creates each match (Organiser.CreateMatch),
plays all its seats with a trivial policy (a random option, answered at once), and
creates the next one when a match ends. Each match has its own connection.

Between ``T`` and ``U`` it counts decisions and measures each one's latency as a
client sees it: from the arrival of a decision request in a match to the arrival
of the match's next one (the answer's way up, the server applying it and asking
the next seat, and the way down). Errors are refused answers (the server decided
at a deadline, or found an answer illegal), aborted matches and failed calls.
The figures go to ``--out`` as JSON; ``bench.load`` starts these processes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import grpc

from mammamia_pb import arena_pb2 as pb

PLAY: Final = "/mammamia.v1.Seat/Play"
CREATE: Final = "/mammamia.v1.Organiser/CreateMatch"
JOIN: Final = "/mammamia.v1.Seat/Join"
_OBSERVE: Final = pb.PlayRequest(observe=pb.ObserveRequest()).SerializeToString()


class Tally:
    """What the crowd measured inside the window."""

    def __init__(self, start_at: float, stop_at: float) -> None:
        self.start_at, self.stop_at = start_at, stop_at
        self.decisions = 0
        self.latencies_us: list[int] = []
        self.starts_us: list[int] = []      # CreateMatch sent -> first decision request
        self.creates_us: list[int] = []     # CreateMatch sent -> its reply
        self.errors: list[str] = []
        self.matches_finished = 0
        self.matches_ended_in_window = 0
        self.matches_started = 0
        self.refusals_us: dict[str, list[int]] = {"Play": [], "Join": []}

    def inside(self) -> bool:
        """Returns whether now is inside the measuring window."""
        return self.start_at <= time.time() < self.stop_at

    def error(self, what: str) -> None:
        """Counts an error (all of them, in the window or not: none is acceptable)."""
        self.errors.append(what)


def decision_in(event: pb.SeatEvent) -> pb.DecisionRequest | None:
    """Returns the decision request an event carries: a ``decision``, or the open
    decision of a ``snapshot`` (the first message of a stream that joined after the
    seat was asked); None for any other event."""
    which = event.WhichOneof("event")
    if which == "decision":
        return event.decision
    if which == "snapshot" and event.snapshot.HasField("decision"):
        return event.snapshot.decision
    return None


async def hold(server: str, key: str, players: int, deadline_ms: int, rng: random.Random,
               tally: Tally) -> None:
    """Plays match after match on one connection until cancelled."""
    options = [("grpc.use_local_subchannel_pool", 1)]   # a connection of its own
    async with grpc.aio.insecure_channel(server, options=options) as channel:
        create = channel.unary_unary(
            CREATE, request_serializer=pb.CreateMatchRequest.SerializeToString,
            response_deserializer=pb.CreateMatchResponse.FromString)
        play: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(PLAY)
        while True:
            asked = time.perf_counter_ns()
            try:
                created = await create(
                    pb.CreateMatchRequest(players=players, seed=rng.randrange(2**62),
                                          time_control=pb.TimeControl(deadline_ms=deadline_ms)),
                    metadata=(("organiser-key", key),), timeout=30)
            except grpc.aio.AioRpcError as e:
                tally.error(f"CreateMatch: {e.code().name}: {e.details()}")
                await asyncio.sleep(1)
                continue
            tally.matches_started += 1
            if tally.inside():
                tally.creates_us.append((time.perf_counter_ns() - asked) // 1000)
            await _play(play, created.seat_tokens, rng, tally, asked)


async def _play(play: grpc.aio.StreamStreamMultiCallable[bytes, bytes], tokens: Sequence[str],
                rng: random.Random, tally: Tally, asked: int) -> None:
    last: list[int] = []      # arrival of the match's previous decision request

    async def seat(token: str) -> None:
        call = play(metadata=(("seat-token", token),))
        try:
            await call.write(_OBSERVE)
            async for raw in call:
                now = time.perf_counter_ns()
                for event in pb.SeatEvents.FromString(raw).events:
                    which = event.WhichOneof("event")
                    d = decision_in(event)
                    if d is not None:
                        if last and tally.inside():
                            tally.decisions += 1
                            tally.latencies_us.append((now - last[0]) // 1000)
                        elif not last and tally.inside():
                            tally.starts_us.append((now - asked) // 1000)
                        last[:] = [now]
                        act = pb.ActRequest(decision_id=d.decision_id,
                                            option=rng.randrange(len(d.options)))
                        await call.write(pb.PlayRequest(act=act).SerializeToString())
                    elif which == "act_result" and not event.act_result.accepted:
                        tally.error(f"answer refused: {event.act_result.message}")
                    elif which == "match_ended":
                        if event.match_ended.status != pb.MATCH_STATUS_FINISHED:
                            tally.error("match aborted")
                        return
            tally.error("stream closed before the match ended")
        except grpc.aio.AioRpcError as e:
            tally.error(f"Play: {e.code().name}: {e.details()}")
        finally:
            call.cancel()

    await asyncio.gather(*(seat(t) for t in tokens))
    tally.matches_finished += 1
    if tally.inside():
        tally.matches_ended_in_window += 1


async def probe(server: str, tally: Tally, every: float = 0.2) -> None:
    """Times, every ``every`` seconds in the window, how long the server takes to refuse
    a Play call and a Join call with an unknown seat token: how long a new call of each
    method waits before the server takes it up."""
    metadata = (("seat-token", "unknown"),)
    async with grpc.aio.insecure_channel(server) as channel:
        play: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(PLAY)
        join: grpc.aio.UnaryUnaryMultiCallable[pb.JoinRequest, bytes] = channel.unary_unary(
            JOIN, request_serializer=pb.JoinRequest.SerializeToString)

        async def refused(method: str) -> None:
            start = time.perf_counter_ns()
            try:
                if method == "Play":
                    # As every client does, the first message goes up at once.
                    async for _ in play(iter((_OBSERVE,)), metadata=metadata):
                        pass
                else:
                    await join(pb.JoinRequest(), metadata=metadata)
            except grpc.aio.AioRpcError as e:
                if e.code() is not grpc.StatusCode.UNAUTHENTICATED:
                    tally.error(f"probe {method}: {e.code().name}: {e.details()}")
                    return
            tally.refusals_us[method].append((time.perf_counter_ns() - start) // 1000)

        calls = []
        await asyncio.sleep(max(0.0, tally.start_at - time.time()))
        while tally.inside():
            calls += [asyncio.ensure_future(refused(m)) for m in tally.refusals_us]
            await asyncio.sleep(every)
        await asyncio.gather(*calls)


async def crowd(server: str, key: str, matches: int, players: int, deadline_ms: int,
                start_at: float, stop_at: float, seed: int,
                probing: bool = False) -> dict[str, Any]:
    """Returns the crowd's figures after holding ``matches`` matches until ``stop_at``
    (and, when ``probing``, timing refused calls meanwhile, see :func:`probe`)."""
    tally = Tally(start_at, stop_at)
    rng = random.Random(seed)
    holders = [asyncio.ensure_future(hold(server, key, players, deadline_ms,
                                          random.Random(rng.random()), tally))
               for _ in range(matches)]
    if probing:
        holders.append(asyncio.ensure_future(probe(server, tally)))
    await asyncio.sleep(max(0.0, stop_at - time.time()))
    for task in holders:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*holders, return_exceptions=True)
    return {"decisions": tally.decisions, "latencies_us": tally.latencies_us,
            "starts_us": tally.starts_us, "creates_us": tally.creates_us,
            "errors": len(tally.errors), "error_examples": sorted(set(tally.errors))[:5],
            "matches_started": tally.matches_started,
            "matches_finished": tally.matches_finished,
            "matches_ended_in_window": tally.matches_ended_in_window,
            "refusals_us": tally.refusals_us}


def main(argv: Sequence[str] | None = None) -> None:
    """Runs a crowd from the command line and writes its figures to ``--out``."""
    parser = argparse.ArgumentParser(prog="python -m bench.crowd", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", required=True)
    parser.add_argument("--organiser-key", required=True)
    parser.add_argument("--matches", type=int, required=True)
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--deadline-ms", type=int, default=5000)
    parser.add_argument("--start-at", type=float, required=True, help="UNIX time")
    parser.add_argument("--stop-at", type=float, required=True, help="UNIX time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--probe", action="store_true",
                        help="also time refused Play and Join calls in the window")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    result = asyncio.run(crowd(args.server, args.organiser_key, args.matches, args.players,
                               args.deadline_ms, args.start_at, args.stop_at, args.seed,
                               args.probe))
    args.out.write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main()
