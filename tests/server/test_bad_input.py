"""Bad bytes and oversized inputs get a defined status: a Play message that cannot be
decoded ends the call with INVALID_ARGUMENT (it does not leave a deaf stream), a
status message quotes at most a bounded part of the caller's input, and an answer
naming an absurdly long decision id is refused as malformed."""

from __future__ import annotations

import asyncio

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import create_match, seat_metadata

TIMEOUT_S = 30
# A PlayRequest whose `act` holds a decision id that is not UTF-8: protobuf refuses it.
UNDECODABLE_ACT = b"\x12\x05\x0a\x03\xff\xfe\xfd"


def test_an_undecodable_play_message_ends_the_call(server):
    async def go() -> tuple[grpc.StatusCode, str, int]:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=5)
            play = channel.stream_stream("/mammamia.v1.Seat/Play")
            call = play(metadata=seat_metadata(created.seat_tokens[0]))
            await call.write(pb.PlayRequest(observe=pb.ObserveRequest()).SerializeToString())
            first = pb.SeatEvents.FromString(await call.read())
            await call.write(UNDECODABLE_ACT)
            async with asyncio.timeout(TIMEOUT_S):
                try:
                    while await call.read() is not grpc.aio.EOF:
                        pass
                except grpc.aio.AioRpcError:
                    pass                        # the call's status, read below
            return await call.code(), await call.details(), len(first.events)

    code, details, events = asyncio.run(go())
    assert events >= 1                       # the snapshot came first
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert "PlayRequest" in details and "Error" not in details


def test_a_huge_match_id_is_not_quoted_back_whole(server):
    async def go() -> grpc.aio.AioRpcError:
        async with grpc.aio.insecure_channel(server.address) as channel:
            try:
                await pb_grpc.SpectateStub(channel).GetRecord(
                    pb.GetRecordRequest(match_id="m" * 500_000), timeout=TIMEOUT_S)
            except grpc.aio.AioRpcError as e:
                return e
        raise AssertionError("a record for an unknown match")

    error = asyncio.run(go())
    assert error.code() is grpc.StatusCode.NOT_FOUND
    assert len(error.details() or "") < 200


def test_a_huge_decision_id_is_malformed(server):
    async def go() -> grpc.aio.AioRpcError:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=6)
            try:
                await pb_grpc.SeatStub(channel).Act(
                    pb.ActRequest(decision_id="d" * 100_000, option=0),
                    metadata=seat_metadata(created.seat_tokens[0]), timeout=TIMEOUT_S)
            except grpc.aio.AioRpcError as e:
                return e
        raise AssertionError("an answer to no decision was accepted")

    error = asyncio.run(go())
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert (error.details() or "").startswith("REFUSAL_MALFORMED")
    assert len(error.details() or "") < 200
