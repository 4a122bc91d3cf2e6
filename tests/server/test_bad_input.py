"""Bad bytes and oversized inputs get a defined status: a request that cannot be
decoded gets INVALID_ARGUMENT (never UNKNOWN, never a Python class name), a Play
message that cannot be decoded ends the call (it does not leave a deaf stream), a
status message quotes at most a bounded part of the caller's input, and an answer
naming an absurdly long decision id is refused as malformed."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import create_match, seat_metadata

if TYPE_CHECKING:
    from tests.conftest import RunningServer

TIMEOUT_S = 30
# A PlayRequest whose `act` holds a decision id that is not UTF-8: protobuf refuses it.
UNDECODABLE_ACT = b"\x12\x05\x0a\x03\xff\xfe\xfd"


def test_an_undecodable_play_message_ends_the_call(server: RunningServer) -> None:
    async def go() -> tuple[grpc.StatusCode, str, int]:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=5)
            play: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(
                "/mammamia.v1.Seat/Play"
            )
            call = play(metadata=seat_metadata(created.seat_tokens[0]))
            await call.write(pb.PlayRequest(observe=pb.ObserveRequest()).SerializeToString())
            read = await call.read()
            assert isinstance(read, bytes)
            first = pb.SeatEvents.FromString(read)
            await call.write(UNDECODABLE_ACT)
            async with asyncio.timeout(TIMEOUT_S):
                try:
                    while await call.read() is not grpc.aio.EOF:
                        pass
                except grpc.aio.AioRpcError:
                    pass  # the call's status, read below
            return await call.code(), await call.details(), len(first.events)

    code, details, events = asyncio.run(go())
    assert events >= 1  # the snapshot came first
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert "PlayRequest" in details and "Error" not in details


def test_a_huge_match_id_is_not_quoted_back_whole(server: RunningServer) -> None:
    async def go() -> grpc.aio.AioRpcError:
        async with grpc.aio.insecure_channel(server.address) as channel:
            try:
                await pb_grpc.SpectateStub(channel).GetRecord(
                    pb.GetRecordRequest(match_id="m" * 500_000), timeout=TIMEOUT_S
                )
            except grpc.aio.AioRpcError as e:
                return e
        raise AssertionError("a record for an unknown match")

    error = asyncio.run(go())
    assert error.code() is grpc.StatusCode.NOT_FOUND
    assert len(error.details() or "") < 200


def test_a_huge_decision_id_is_malformed(server: RunningServer) -> None:
    async def go() -> grpc.aio.AioRpcError:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=6)
            try:
                await pb_grpc.SeatStub(channel).Act(
                    pb.ActRequest(decision_id="d" * 100_000, option=0),
                    metadata=seat_metadata(created.seat_tokens[0]),
                    timeout=TIMEOUT_S,
                )
            except grpc.aio.AioRpcError as e:
                return e
        raise AssertionError("an answer to no decision was accepted")

    error = asyncio.run(go())
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert (error.details() or "").startswith("REFUSAL_MALFORMED")
    assert len(error.details() or "") < 200


GARBAGE = [
    b"\x0a\x03\xff\xfe\xfd",  # a string field that is not UTF-8
    b"\x0a\xff\xff\xff\xff\x0f",  # a length past the end
    b"\x0b" * 200_000,
]  # 200,000 nested groups


def test_undecodable_requests_are_invalid_arguments(server: RunningServer) -> None:
    methods = [
        "/mammamia.v1.Seat/Join",
        "/mammamia.v1.Seat/Act",
        "/mammamia.v1.Spectate/GetRecord",
        "/mammamia.v1.Organiser/GetRecord",
        "/mammamia.v1.Ladder/Register",
        "/mammamia.v1.Ladder/Standings",
    ]

    async def go() -> list[tuple[str, grpc.StatusCode, str]]:
        out = []
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=7)
            meta = seat_metadata(created.seat_tokens[0])
            for method in methods:
                for data in GARBAGE:
                    try:
                        ask: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
                            method
                        )
                        await ask(data, metadata=meta, timeout=TIMEOUT_S)
                        out.append((method, grpc.StatusCode.OK, ""))
                    except grpc.aio.AioRpcError as e:
                        out.append((method, e.code(), e.details() or ""))
            for data in GARBAGE[:1]:
                watch: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = channel.unary_stream(
                    "/mammamia.v1.Spectate/Watch"
                )
                call = watch(data, timeout=TIMEOUT_S)
                try:
                    async for _ in call:
                        pass
                except grpc.aio.AioRpcError as e:
                    out.append(("Watch", e.code(), e.details() or ""))
                plays: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channel.stream_stream(
                    "/mammamia.v1.Seat/Play"
                )
                play = plays(metadata=meta)
                await play.write(b"\x0a" + data[1:])  # `observe` that does not decode
                try:
                    while await play.read() is not grpc.aio.EOF:
                        pass
                except grpc.aio.AioRpcError:
                    pass
                out.append(("Play", await play.code(), await play.details() or ""))
        return out

    results = asyncio.run(go())
    assert len(results) == len(methods) * len(GARBAGE) + 2
    for method, code, details in results:
        # Standings has only a number field: the garbage may decode as unknown fields.
        if method.endswith("Standings") and code is grpc.StatusCode.OK:
            continue
        assert code is grpc.StatusCode.INVALID_ARGUMENT, (method, code, details)
        assert "class" not in details and "Error" not in details, (method, details)
