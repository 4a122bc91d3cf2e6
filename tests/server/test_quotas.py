"""Bounds on what one client may hold or ask, against a real server: streams per seat,
a Play stream that stops reading its answers once its replies are not read, rates
per address for calls without a key, idle and half-open connections closed, and a
server that keeps serving at its open-file limit."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import MAMMAMIA, create_match, seat_metadata

if TYPE_CHECKING:
    from tests.conftest import RunningServer

TIMEOUT_S = 30


Opener = Callable[[], Awaitable[Any]]
"""Opens one more stream of a seat (an Observe or PlayMatches call, its request sent)."""


async def refused_twice(open_stream: Opener) -> list[grpc.StatusCode]:
    """Returns the status of two streams opened beyond the seat's limit."""
    codes = []
    for _ in range(2):
        extra = await open_stream()
        with pytest.raises(grpc.aio.AioRpcError):
            await extra.read()
        codes.append(await extra.code())
    return codes


async def opens_again(open_stream: Opener) -> grpc.StatusCode:
    """Returns OK once a stream opens (the server learns of a cancel soon), or the
    first status other than RESOURCE_EXHAUSTED."""
    async with asyncio.timeout(TIMEOUT_S):
        while True:
            again = await open_stream()
            try:
                await again.read()
                return grpc.StatusCode.OK
            except grpc.aio.AioRpcError as e:
                if e.code() is not grpc.StatusCode.RESOURCE_EXHAUSTED:
                    return e.code()


def test_a_seat_holds_at_most_its_streams(start_server: Callable[..., RunningServer]) -> None:
    server = start_server(streams_per_seat=2)

    async def go() -> tuple[list[grpc.StatusCode], grpc.StatusCode]:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=3)
            stub = pb_grpc.SeatStub(channel)
            token = seat_metadata(created.seat_tokens[0])

            async def observing() -> Any:
                return stub.Observe(pb.ObserveRequest(), metadata=token)

            opened = [await observing() for _ in range(2)]
            for call in opened:
                await call.read()  # the snapshot: the stream is open
            codes = await refused_twice(observing)  # a third stream, twice
            opened[0].cancel()
            return codes, await opens_again(observing)  # once one closes, another may

    codes, after_close = asyncio.run(go())
    assert codes == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2
    assert after_close is grpc.StatusCode.OK


def test_a_seat_taken_on_play_matches_counts_as_a_stream_until_its_call_ends(
    start_server: Callable[..., RunningServer],
) -> None:
    """A sit holds one of its seat's streams from the moment it is read; a call ended
    (cancelled by its client) lets go of it, whether or not its stream had opened."""
    server = start_server(streams_per_seat=2)

    async def go() -> tuple[list[grpc.StatusCode], grpc.StatusCode]:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=3)
            play_matches: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(
                "/mammamia.v1.Seat/PlayMatches"
            )
            sit = pb.PlayRequest(
                sit=pb.SitRequest(seat_token=created.seat_tokens[0])
            ).SerializeToString()

            async def sitting() -> Any:
                call = play_matches()
                await call.write(sit)
                return call

            opened = [await sitting() for _ in range(2)]
            for call in opened:
                await call.read()  # the snapshot: the seat is taken
            codes = await refused_twice(sitting)  # a third, twice
            for _ in range(3):  # sat and cancelled at once, three times
                (await sitting()).cancel()
            opened[0].cancel()
            return codes, await opens_again(sitting)

    codes, after_close = asyncio.run(go())
    assert codes == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2
    assert after_close is grpc.StatusCode.OK


def test_a_play_stream_whose_replies_are_not_read_stops_reading(
    start_server: Callable[..., RunningServer],
) -> None:
    server = start_server(reply_queue=4)
    answers = 5_000  # 50 MB of answers: more than any HTTP/2 window the server allows

    async def go() -> int:
        # A small receive window and no window growth: the client's buffer fills fast.
        async with grpc.aio.insecure_channel(
            server.address,
            options=[("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 1024)],
        ) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=4)
            play: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(
                "/mammamia.v1.Seat/Play"
            )
            call = play(metadata=seat_metadata(created.seat_tokens[0]))
            await call.write(pb.PlayRequest(observe=pb.ObserveRequest()).SerializeToString())
            # Each answer padded with an unknown field (tag 15, 10 kB), which decodes.
            answer = (
                pb.PlayRequest(
                    act=pb.ActRequest(decision_id="no-such-decision", option=0)
                ).SerializeToString()
                + b"\x7a\x90\x4e"
                + b"x" * 10_000
            )
            sent = 0
            try:
                while sent < answers:
                    # Never read: once the server stops reading, a write no longer
                    # completes (HTTP/2 flow control).
                    await asyncio.wait_for(call.write(answer), 5)
                    sent += 1
            except TimeoutError:
                pass
            call.cancel()
            return sent

    sent = asyncio.run(go())
    assert sent < answers


def test_calls_without_a_key_are_rate_limited_per_address(
    start_server: Callable[..., RunningServer],
) -> None:
    server = start_server(register_rate="3/minute", public_rate="4/minute")

    with grpc.insecure_channel(server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        for n in range(3):
            ladder.Register(pb.RegisterRequest(name=f"bot-{n}"), timeout=TIMEOUT_S)
        with pytest.raises(grpc.RpcError) as refused:
            ladder.Register(pb.RegisterRequest(name="bot-3"), timeout=TIMEOUT_S)
        for _ in range(4):
            ladder.Standings(pb.StandingsRequest(), timeout=TIMEOUT_S)
        with pytest.raises(grpc.RpcError) as standings:
            ladder.Standings(pb.StandingsRequest(), timeout=TIMEOUT_S)
        watch = pb_grpc.SpectateStub(channel).Watch(
            pb.WatchRequest(match_id="m"), timeout=TIMEOUT_S
        )
        with pytest.raises(grpc.RpcError) as watched:
            next(watch)
        # Calls with a key are not counted.
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())  # type: ignore[attr-defined]

    assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "Register" in (refused.value.details() or "")
    trailers: dict[str, Any] = dict(refused.value.trailing_metadata() or ())  # type: ignore[arg-type]
    assert 0 < int(trailers["retry-after-ms"]) <= 60_000
    assert standings.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert watched.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert health.status == health_pb2.HealthCheckResponse.SERVING


def test_idle_and_silent_connections_are_closed(start_server: Callable[..., RunningServer]) -> None:
    server = start_server(idle_seconds=0.5, handshake_timeout=0.5)

    # A TCP connection that never sends the HTTP/2 preface is closed by the handshake
    # timeout; an HTTP/2 connection without calls by the idle timeout (GOAWAY).
    silent = socket.create_connection(("127.0.0.1", server.port))
    silent.settimeout(TIMEOUT_S)
    assert _until_closed(silent) is True

    async def idle_goaway() -> grpc.ChannelConnectivity:
        async with grpc.aio.insecure_channel(server.address) as channel:
            await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())  # type: ignore[attr-defined]
            assert channel.get_state() is grpc.ChannelConnectivity.READY
            async with asyncio.timeout(TIMEOUT_S):
                await channel.wait_for_state_change(grpc.ChannelConnectivity.READY)
            return channel.get_state()

    assert asyncio.run(idle_goaway()) is not grpc.ChannelConnectivity.READY


def _until_closed(sock: socket.socket) -> bool:
    """Returns True once the peer closed ``sock`` (reading what it sent until then)."""
    with sock:
        while True:
            try:
                if not sock.recv(4096):
                    return True
            except ConnectionResetError:
                return True


def test_at_its_open_file_limit_the_server_still_serves(
    start_server: Callable[..., RunningServer],
) -> None:
    # 140 descriptors: the server accepts 16 connections at most (140 - 128 < 16), so
    # a crowd of clients is turned away at the door (UNAVAILABLE, at once) instead of
    # exhausting the descriptors; once idle connections are closed, a client gets in.
    server = start_server(open_files=(140, 140), idle_seconds=1)
    assert '"open_file_limit": 140' in server.logs()
    # Each channel its own connection (channels of a process share them by default).
    crowd = [
        grpc.insecure_channel(server.address, options=[("grpc.use_local_subchannel_pool", 1)])
        for _ in range(40)
    ]
    codes = []
    try:
        for channel in crowd:
            try:
                health_pb2_grpc.HealthStub(channel).Check(  # type: ignore[attr-defined]
                    health_pb2.HealthCheckRequest(), timeout=TIMEOUT_S
                )
                codes.append(grpc.StatusCode.OK)
            except grpc.RpcError as e:
                codes.append(e.code())
        with grpc.insecure_channel(server.address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(  # type: ignore[attr-defined]
                health_pb2.HealthCheckRequest(), timeout=TIMEOUT_S, wait_for_ready=True
            )
    finally:
        for channel in crowd:
            channel.close()
    assert set(codes) == {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE}
    assert codes.count(grpc.StatusCode.OK) <= 16
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    assert server.running


def test_the_open_file_limit_is_raised_to_its_hard_limit(
    start_server: Callable[..., RunningServer],
) -> None:
    server = start_server(open_files=(150, 400))
    assert '"open_file_limit": 400' in server.logs()


def test_the_organiser_key_comes_from_a_file(
    start_server: Callable[..., RunningServer], tmp_path: Path
) -> None:
    key_file = tmp_path / "organiser.key"
    key_file.write_text("key-from-a-file\n")
    server = start_server(organiser_key_file=key_file)

    listed = subprocess.run(
        [
            str(MAMMAMIA),
            "match",
            "list",
            "--server",
            server.address,
            "--organiser-key-file",
            str(key_file),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={},
    )
    wrong = subprocess.run(
        [str(MAMMAMIA), "match", "list", "--server", server.address, "--organiser-key", "test-key"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={},
    )
    assert listed.returncode == 0, listed.stderr
    assert wrong.returncode == 1 and "PERMISSION_DENIED" in wrong.stderr


def test_an_unreadable_organiser_key_file_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "absent.key"
    done = subprocess.run(
        [
            str(MAMMAMIA),
            "serve",
            "--port",
            "0",
            "--db",
            str(tmp_path / "a.db"),
            "--organiser-key-file",
            str(missing),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={},
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and str(missing) in done.stderr
    assert not (tmp_path / "a.db").exists()
