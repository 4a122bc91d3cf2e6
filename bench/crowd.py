"""A crowd of bots in one process: many matches, every seat on its own Play stream.

``python -m bench.crowd --server ADDR --organiser-key KEY --matches M --start-at T
--stop-at U --out FILE`` keeps ``M`` matches of ``--players`` seats running on the
server until the wall-clock time ``U``: it creates each match (Organiser.CreateMatch),
plays all its seats with a trivial policy (a random option, answered at once), and
creates the next one when a match ends. Each of the ``M`` holders has its own
connection, and on it one ``Organiser.CreateMatches`` call that creates its matches
and one ``Seat.PlayMatches`` call per seat that plays them: made places by ``wait``,
which every CreateMatch request names, so a match starts with no ``sit`` (``--calls
places``, the default), or sent a ``sit`` with the seat's token for every match
(``--calls matches``); or a CreateMatch call and a new ``Seat.Play`` call per seat for
every match (``--calls play``). No new call is opened per match but with ``play``.

With ``--window FILE`` instead of the two times, it writes ``--ready FILE`` (the
time, once every one of its matches has had a decision request) and then waits for
``FILE`` to hold the window as JSON (``{"start_at": T, "stop_at": U}``): so that
``bench.load`` opens the window only after every seat's call has been taken up.

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import grpc

from mammamia_pb import arena_pb2 as pb

PLAY: Final = "/mammamia.v1.Seat/Play"
PLAY_MATCHES: Final = "/mammamia.v1.Seat/PlayMatches"
CALLS: Final = ("places", "matches", "play")
_OBSERVE: Final = pb.PlayRequest(observe=pb.ObserveRequest()).SerializeToString()
BATCH_MS: Final = 1000  # as the SDK's bots ask (client_sdk.connection.BATCH_MS)
CREATE: Final = "/mammamia.v1.Organiser/CreateMatch"
CREATE_MATCHES: Final = "/mammamia.v1.Organiser/CreateMatches"
JOIN: Final = "/mammamia.v1.Seat/Join"


class Tally:
    """What the crowd measured inside the window."""

    def __init__(self, start_at: float, stop_at: float) -> None:
        self.start_at, self.stop_at = start_at, stop_at
        self.decisions = 0
        self.messages = 0  # SeatEvents messages received in the window
        self.latencies_us: list[int] = []
        self.starts_us: list[int] = []  # CreateMatch sent -> first decision request
        self.ends_us: list[int] = []  # last decision request -> last match_ended
        self.creates_us: list[int] = []  # CreateMatch sent -> its reply
        self.errors: list[str] = []
        self.matches_finished = 0
        self.matches_ended_in_window = 0
        self.matches_started = 0
        self.refusals_us: dict[str, list[int]] = {"Play": [], "Join": []}
        self.holders_in_play = 0  # holders whose first match has been asked
        self.holders_at_window: int | None = None  # how many, when the window was set

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


async def hold(
    server: str,
    key: str,
    players: int,
    deadline_ms: int,
    rng: random.Random,
    tally: Tally,
    calls: str = "places",
    opening: Opening | None = None,
    batch_ms: int = 0,
) -> None:
    """Plays match after match on one connection until cancelled: created on one
    CreateMatches call, every seat on one PlayMatches call for all the matches, a
    place each match names (``calls="places"``) or sent a ``sit`` per match
    (``calls="matches"``); or created by a CreateMatch call each, every seat on a Play
    call of its own per match (``calls="play"``). With ``opening``, the first match
    waits until every holder's calls have been taken up."""
    options = [("grpc.use_local_subchannel_pool", 1)]  # a connection of its own
    async with grpc.aio.insecure_channel(server, options=options) as channel:
        creator = Creator(channel, key, calls != "play")
        play: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(PLAY)

        async def open_seats() -> tuple[list[Seats], list[str]]:
            held = [Seats(channel.stream_stream(PLAY_MATCHES)) for _ in range(players)]
            return held, ([await s.wait(batch_ms) for s in held] if calls == "places" else [])

        seats: list[Seats] = []
        places: list[str] = []
        played = False
        with contextlib.suppress(grpc.aio.AioRpcError):  # (counted when used)
            if calls != "play":
                seats, places = await open_seats()
            if opening is not None:
                await creator.open()
                for s in seats:
                    await s.call.initial_metadata()
        if opening is not None:
            await opening.opened()

        def started() -> None:
            nonlocal played
            if not played:
                played = True
                tally.holders_in_play += 1

        try:
            while True:
                if calls != "play" and (len(seats) < players or any(s.broken for s in seats)):
                    for s in seats:
                        s.call.cancel()
                    try:
                        seats, places = await open_seats()
                    except grpc.aio.AioRpcError as e:
                        tally.error(f"PlayMatches: {e.code().name}: {e.details()}")
                        await asyncio.sleep(1)
                        continue
                asked = time.perf_counter_ns()
                # Placed seats stream as soon as the match is created: read them already.
                playing = (
                    asyncio.ensure_future(
                        _play(play, seats, None, rng, tally, asked, started, batch_ms)
                    )
                    if places
                    else None
                )
                try:
                    created = await creator.create(
                        pb.CreateMatchRequest(
                            players=players,
                            seed=rng.randrange(2**62),
                            time_control=pb.TimeControl(deadline_ms=deadline_ms),
                            places=places,
                        )
                    )
                except grpc.aio.AioRpcError as e:
                    tally.error(f"{creator.method}: {e.code().name}: {e.details()}")
                    if playing is not None:
                        playing.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await playing
                    await asyncio.sleep(1)
                    continue
                tally.matches_started += 1
                if tally.inside():
                    tally.creates_us.append((time.perf_counter_ns() - asked) // 1000)
                await (
                    playing
                    or _play(play, seats, created.seat_tokens, rng, tally, asked, started, batch_ms)
                )
        finally:
            for s in seats:
                s.call.cancel()
            creator.close()


class Opening:
    """The crowd's start: no holder creates a match before every holder's calls are
    taken up, so that the server takes them up while it is idle. With ``opened`` and
    ``go`` files, the crowds of one run start together: each writes its ``opened``
    file once its calls are up, and starts once ``go`` exists."""

    def __init__(self, holders: int, opened: Path | None = None, go: Path | None = None) -> None:
        self._waiting = holders
        self._open = asyncio.Event()
        self._files = (opened, go)

    async def opened(self) -> None:
        """Counts one holder's calls as taken up; returns once every holder's are (and,
        with files, once every crowd's are)."""
        self._waiting -= 1
        if self._waiting == 0:
            opened, go = self._files
            if opened is not None and go is not None:
                opened.write_text(str(time.time()), encoding="utf-8")
                while not go.exists():
                    await asyncio.sleep(0.05)
            self._open.set()
        await self._open.wait()


class Creator:
    """Creates matches on one CreateMatches call (``streamed``) or a CreateMatch call
    each."""

    def __init__(self, channel: grpc.aio.Channel, key: str, streamed: bool) -> None:
        self.method = "CreateMatches" if streamed else "CreateMatch"
        self._metadata = (("organiser-key", key),)
        self._one = channel.unary_unary(
            CREATE,
            request_serializer=pb.CreateMatchRequest.SerializeToString,
            response_deserializer=pb.CreateMatchResponse.FromString,
        )
        self._many: (
            grpc.aio.StreamStreamMultiCallable[pb.CreateMatchRequest, pb.CreateMatchResponse] | None
        ) = (
            channel.stream_stream(
                CREATE_MATCHES,
                request_serializer=pb.CreateMatchRequest.SerializeToString,
                response_deserializer=pb.CreateMatchResponse.FromString,
            )
            if streamed
            else None
        )
        self._call: (
            grpc.aio.StreamStreamCall[pb.CreateMatchRequest, pb.CreateMatchResponse] | None
        ) = None

    async def open(self) -> None:
        """Opens the CreateMatches call (if streamed) and returns once it is taken up."""
        if self._many is not None:
            self._call = self._call or self._many(metadata=self._metadata)
            await self._call.initial_metadata()

    async def create(self, request: pb.CreateMatchRequest) -> pb.CreateMatchResponse:
        """Returns the new match; raises AioRpcError (after which a new call is used)."""
        if self._many is None:
            return await self._one(request, metadata=self._metadata, timeout=30)
        call = self._call = self._call or self._many(metadata=self._metadata)
        try:
            await call.write(request)
            answer = await call.read()
        except grpc.aio.AioRpcError:
            self._call = None
            raise
        if not isinstance(answer, pb.CreateMatchResponse):  # EOF: it ended with OK
            self._call = None
            raise grpc.aio.AioRpcError(
                grpc.StatusCode.UNKNOWN,
                grpc.aio.Metadata(),
                grpc.aio.Metadata(),
                "the call ended early",
            )
        return answer

    def close(self) -> None:
        """Ends the CreateMatches call, if one is open."""
        if self._call is not None:
            self._call.cancel()


class Seats:
    """One PlayMatches call: the seat it plays now is sent with :meth:`sit`, or an
    organiser names it (:meth:`wait`)."""

    def __init__(self, open_call: grpc.aio.StreamStreamMultiCallable[bytes, bytes]) -> None:
        self.call = open_call()
        self.broken = False

    async def sit(self, token: str, batch_ms: int) -> grpc.aio.StreamStreamCall[bytes, bytes]:
        """Returns the call, after asking it to play the seat of ``token``."""
        await self.call.write(
            pb.PlayRequest(
                sit=pb.SitRequest(seat_token=token, batch_ms=batch_ms)
            ).SerializeToString()
        )
        return self.call

    async def wait(self, batch_ms: int) -> str:
        """Returns the token of the place the call becomes; raises AioRpcError."""
        await self.call.write(
            pb.PlayRequest(wait=pb.WaitRequest(batch_ms=batch_ms)).SerializeToString()
        )
        raw = await self.call.read()
        if not isinstance(raw, bytes):  # EOF
            raise grpc.aio.AioRpcError(
                grpc.StatusCode.UNKNOWN,
                grpc.aio.Metadata(),
                grpc.aio.Metadata(),
                "PlayMatches ended at its wait",
            )
        return pb.SeatEvents.FromString(raw).events[0].waiting.place


async def _play(
    play: grpc.aio.StreamStreamMultiCallable[bytes, bytes],
    on: Sequence[Seats],
    tokens: Sequence[str] | None,
    rng: random.Random,
    tally: Tally,
    asked: int,
    started: Callable[[], None],
    batch_ms: int,
) -> None:
    """Plays one match's seats: on Play calls (no ``on``), on the PlayMatches calls
    ``on`` with a ``sit`` each, or (no ``tokens``) on places, seated by the organiser."""
    last: list[int] = []  # arrival of the match's previous decision request

    async def seat(i: int, token: str | None) -> None:
        held = on[i] if on else None
        if held is None:
            call = play(metadata=(("seat-token", token or ""),))
        try:
            if held is None:
                await call.write(
                    pb.PlayRequest(observe=pb.ObserveRequest(batch_ms=batch_ms)).SerializeToString()
                )
            elif token is None:
                call = held.call
            else:
                call = await held.sit(token, batch_ms)
            while isinstance(raw := await call.read(), bytes):  # (not EOF)
                now = time.perf_counter_ns()
                if tally.inside():
                    tally.messages += 1
                for event in pb.SeatEvents.FromString(raw).events:
                    which = event.WhichOneof("event")
                    d = decision_in(event)
                    if d is not None:
                        if last and tally.inside():
                            tally.decisions += 1
                            tally.latencies_us.append((now - last[0]) // 1000)
                        elif not last:
                            started()
                            if tally.inside():
                                tally.starts_us.append((now - asked) // 1000)
                        last[:] = [now]
                        act = pb.ActRequest(
                            decision_id=d.decision_id, option=rng.randrange(len(d.options))
                        )
                        await call.write(pb.PlayRequest(act=act).SerializeToString())
                    elif which == "act_result" and not event.act_result.accepted:
                        tally.error(f"answer refused: {event.act_result.message}")
                    elif which == "match_ended":
                        if event.match_ended.status != pb.MATCH_STATUS_FINISHED:
                            tally.error("match aborted")
                        return
            tally.error("stream closed before the match ended")
            if held is not None:
                held.broken = True
        except grpc.aio.AioRpcError as e:
            tally.error(
                f"{'Play' if held is None else 'PlayMatches'}: {e.code().name}: {e.details()}"
            )
            if held is not None:
                held.broken = True
        finally:
            if held is None:
                call.cancel()

    await asyncio.gather(
        *(seat(i, t) for i, t in enumerate(tokens if tokens is not None else [None] * len(on)))
    )
    tally.matches_finished += 1
    if tally.inside():
        tally.matches_ended_in_window += 1
        if last:
            tally.ends_us.append((time.perf_counter_ns() - last[0]) // 1000)


async def probe(server: str, tally: Tally, every: float = 0.2) -> None:
    """Times, every ``every`` seconds in the window, how long the server takes to refuse
    a Play call and a Join call with an unknown seat token: how long a new call of each
    method waits before the server takes it up."""
    metadata = (("seat-token", "unknown"),)
    async with grpc.aio.insecure_channel(server) as channel:
        play: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(PLAY)
        join: grpc.aio.UnaryUnaryMultiCallable[pb.JoinRequest, bytes] = channel.unary_unary(
            JOIN, request_serializer=pb.JoinRequest.SerializeToString
        )

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


async def crowd(
    server: str,
    key: str,
    matches: int,
    players: int,
    deadline_ms: int,
    start_at: float,
    stop_at: float,
    seed: int,
    probing: bool = False,
    calls: str = "matches",
    window: Path | None = None,
    ready: Path | None = None,
    batch_ms: int = 0,
    opened: Path | None = None,
    go: Path | None = None,
) -> dict[str, Any]:
    """Returns the crowd's figures after holding ``matches`` matches until ``stop_at``
    (and, when ``probing``, timing refused calls meanwhile, see :func:`probe`); with
    ``window``, the window is read from that file once ``ready`` is written (see the
    module)."""
    tally = Tally(start_at, stop_at)
    rng = random.Random(seed)
    opening = Opening(matches, opened, go)
    holders = [
        asyncio.ensure_future(
            hold(
                server,
                key,
                players,
                deadline_ms,
                random.Random(rng.random()),
                tally,
                calls,
                opening,
                batch_ms,
            )
        )
        for _ in range(matches)
    ]
    if window is not None:
        await _await_window(tally, matches, window, ready)
    if probing:
        holders.append(asyncio.ensure_future(probe(server, tally)))
    await asyncio.sleep(max(0.0, tally.stop_at - time.time()))
    for task in holders:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*holders, return_exceptions=True)
    return {
        "decisions": tally.decisions,
        "messages": tally.messages,
        "latencies_us": tally.latencies_us,
        "starts_us": tally.starts_us,
        "creates_us": tally.creates_us,
        "ends_us": tally.ends_us,
        "errors": len(tally.errors),
        "error_examples": sorted(set(tally.errors))[:5],
        "matches_started": tally.matches_started,
        "matches_finished": tally.matches_finished,
        "matches_ended_in_window": tally.matches_ended_in_window,
        "refusals_us": tally.refusals_us,
        "holders_at_window": tally.holders_at_window,
    }


async def _await_window(
    tally: Tally, matches: int, window: Path, ready: Path | None, every: float = 0.1
) -> None:
    """Writes ``ready`` once every holder's first match has been asked a decision, then
    returns once ``window`` holds the window, set into ``tally``."""
    told = ready is None
    while True:
        if not told and tally.holders_in_play >= matches and ready is not None:
            ready.write_text(str(time.time()), encoding="utf-8")
            told = True
        with contextlib.suppress(OSError, ValueError, KeyError):
            times = json.loads(window.read_text(encoding="utf-8"))
            tally.start_at, tally.stop_at = float(times["start_at"]), float(times["stop_at"])
            tally.holders_at_window = tally.holders_in_play
            return
        await asyncio.sleep(every)


def main(argv: Sequence[str] | None = None) -> None:
    """Runs a crowd from the command line and writes its figures to ``--out``."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.crowd",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--server", required=True)
    parser.add_argument("--organiser-key", required=True)
    parser.add_argument("--matches", type=int, required=True)
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--deadline-ms", type=int, default=5000)
    parser.add_argument("--start-at", type=float, default=float("inf"), help="UNIX time")
    parser.add_argument("--stop-at", type=float, default=float("inf"), help="UNIX time")
    parser.add_argument(
        "--window", type=Path, help="the file that will hold the window (instead of the times)"
    )
    parser.add_argument(
        "--ready", type=Path, help="with --window: the file written once every match is in play"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--probe", action="store_true", help="also time refused Play and Join calls in the window"
    )
    parser.add_argument(
        "--calls",
        choices=CALLS,
        default="places",
        help="a PlayMatches call per seat for every match, a place each "
        "CreateMatch names (places) or sent a sit per match (matches), or "
        "a Play call per seat and match (play)",
    )
    parser.add_argument(
        "--opened", type=Path, help="with --go: the file written once every match's calls are up"
    )
    parser.add_argument(
        "--go", type=Path, help="with --opened: no match is created before this file exists"
    )
    parser.add_argument(
        "--batch-ms",
        type=int,
        default=BATCH_MS,
        help="the batching bound every seat's stream asks for "
        "(ObserveRequest.batch_ms; 0: the server's 20 ms)",
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.window is None and args.stop_at == float("inf"):
        parser.error("give --start-at and --stop-at, or --window")
    result = asyncio.run(
        crowd(
            args.server,
            args.organiser_key,
            args.matches,
            args.players,
            args.deadline_ms,
            args.start_at,
            args.stop_at,
            args.seed,
            args.probe,
            args.calls,
            args.window,
            args.ready,
            args.batch_ms,
            args.opened,
            args.go,
        )
    )
    args.out.write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main()
