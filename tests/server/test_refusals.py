"""Bad answers, bad tokens, bad requests: each gets its status code and a message that
names the reason (and the rule id for an illegal answer), and the server keeps serving."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import create_match, seat_metadata

Code = grpc.StatusCode


@dataclass
class Open:
    """A match whose seats all observe, with the first decision asked."""

    channel: grpc.aio.Channel
    created: pb.CreateMatchResponse
    seat: int                       # the seat asked
    decision: pb.DecisionRequest
    calls: list[grpc.aio.UnaryStreamCall]

    def act(self, seat: int, **fields: object) -> object:
        stub = pb_grpc.SeatStub(self.channel)
        return stub.Act(pb.ActRequest(**fields),  # type: ignore[arg-type]
                        metadata=seat_metadata(self.created.seat_tokens[seat]), timeout=10)

    async def refusal(self, seat: int, **fields: object) -> grpc.aio.AioRpcError:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await self.act(seat, **fields)
        return caught.value


@asynccontextmanager
async def opened(server, players: int = 2, **fields: object) -> AsyncIterator[Open]:
    async with grpc.aio.insecure_channel(server.address) as channel:
        created = await create_match(channel, server.organiser_key, players, seed=3,
                                     time_control=pb.TimeControl(deadline_ms=60_000), **fields)
        stub = pb_grpc.SeatStub(channel)
        calls = [stub.Observe(pb.ObserveRequest(), metadata=seat_metadata(t))
                 for t in created.seat_tokens]

        async def first_decision(seat: int) -> tuple[int, pb.DecisionRequest]:
            async for message in calls[seat]:
                for event in message.events:
                    if event.HasField("decision"):
                        return seat, event.decision
            raise AssertionError("stream ended without a decision")

        tasks = [asyncio.ensure_future(first_decision(i)) for i in range(players)]
        done, pending = await asyncio.wait(tasks, timeout=20, return_when="FIRST_COMPLETED")
        assert done, "no decision was asked"
        for t in pending:
            t.cancel()
        seat, decision = done.pop().result()
        try:
            yield Open(channel, created, seat, decision, calls)
        finally:
            for c in calls:
                c.cancel()


def run(coro: object) -> None:
    asyncio.run(coro)  # type: ignore[arg-type]


def test_illegal_answer_names_the_rule_and_leaves_the_decision_open(server):
    async def go() -> None:
        async with opened(server) as m:
            assert m.decision.kind == pb.DECISION_KIND_TURN
            # Playing more cards than any hand holds is refused by R-TURN-1.
            illegal = pb.Action(turn=pb.TurnAction(ingredient="salami", count=7,
                                                   draw=pb.DRAW_SOURCE_SUPPLY))
            err = await m.refusal(m.seat, decision_id=m.decision.decision_id, action=illegal)
            assert err.code() == Code.INVALID_ARGUMENT
            assert "R-TURN-1" in err.details()
            err = await m.refusal(m.seat, decision_id=m.decision.decision_id, option=10_000)
            assert err.code() == Code.INVALID_ARGUMENT and "option 10000" in err.details()
            # Still open: a legal answer by value is accepted.
            reply = await m.act(m.seat, decision_id=m.decision.decision_id,
                                action=m.decision.options[-1])
            assert reply.decision_id == m.decision.decision_id
    run(go())


def test_duplicate_answer_is_accepted_and_a_different_one_is_stale(server):
    async def go() -> None:
        async with opened(server) as m:
            d = m.decision.decision_id
            await m.act(m.seat, decision_id=d, option=0)
            await m.act(m.seat, decision_id=d, option=0)          # idempotent
            await m.act(m.seat, decision_id=d, action=m.decision.options[0])
            if len(m.decision.options) > 1:
                err = await m.refusal(m.seat, decision_id=d, option=1)
                assert err.code() == Code.FAILED_PRECONDITION
                assert "already answered" in err.details()
            err = await m.refusal(m.seat, decision_id="d999", option=0)
            assert err.code() == Code.FAILED_PRECONDITION and "d999" in err.details()
    run(go())


def test_another_seats_decision_is_denied(server):
    async def go() -> None:
        async with opened(server, players=3) as m:
            other = (m.seat + 1) % 3
            err = await m.refusal(other, decision_id=m.decision.decision_id, option=0)
            assert err.code() == Code.PERMISSION_DENIED
            assert f"seat {m.seat}" in err.details()
    run(go())


def test_malformed_answers_are_invalid_arguments(server):
    async def go() -> None:
        async with opened(server) as m:
            d = m.decision.decision_id
            cases = [
                {"decision_id": d},                                      # no choice
                {"decision_id": d, "action": pb.Action()},               # no kind (oneof)
                {"decision_id": "", "option": 0},                        # no decision id
                {"decision_id": d, "action": pb.Action(turn=pb.TurnAction(
                    ingredient="cheese", count=1, draw=pb.DRAW_SOURCE_SUPPLY))},
                {"decision_id": d, "action": pb.Action(turn=pb.TurnAction(
                    ingredient="salami", count=1, draw=pb.DRAW_SOURCE_UNSPECIFIED))},
                {"decision_id": d, "action": pb.Action(resolve=pb.ResolveAction(bake=False))},
            ]
            for fields in cases:
                err = await m.refusal(m.seat, **fields)
                assert err.code() == Code.INVALID_ARGUMENT, (fields, err.details())
            err = await m.refusal(m.seat, decision_id=d, action=pb.Action(
                turn=pb.TurnAction(ingredient="cheese", count=1)))
            assert "R-COMP-1" in err.details()
            err = await m.refusal(m.seat, decision_id=d, action=pb.Action(
                resolve=pb.ResolveAction(bake=False)))
            assert "R-TURN-1" in err.details()     # a turn is asked, not a resolution
    run(go())


def test_play_stream_answers_in_band(server):
    async def go() -> None:
        async with opened(server) as m:
            stub = pb_grpc.SeatStub(m.channel)
            meta = seat_metadata(m.created.seat_tokens[m.seat])
            # The first message must be `observe`.
            call = stub.Play(iter([pb.PlayRequest(act=pb.ActRequest(decision_id="d1",
                                                                    option=0))]), metadata=meta)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in call:
                    pass
            assert caught.value.code() == Code.INVALID_ARGUMENT
            queue: asyncio.Queue[pb.PlayRequest] = asyncio.Queue()
            queue.put_nowait(pb.PlayRequest(observe=pb.ObserveRequest()))

            async def requests() -> AsyncIterator[pb.PlayRequest]:
                while True:
                    yield await queue.get()

            call = stub.Play(requests(), metadata=meta)
            results = []
            async with asyncio.timeout(20):
                async for message in call:
                    for event in message.events:
                        if event.HasField("decision") and not results:
                            d = event.decision.decision_id
                            queue.put_nowait(pb.PlayRequest(act=pb.ActRequest(decision_id=d,
                                                                              option=99_999)))
                            queue.put_nowait(pb.PlayRequest(act=pb.ActRequest(decision_id=d,
                                                                              option=0)))
                            queue.put_nowait(pb.PlayRequest(observe=pb.ObserveRequest()))
                        if event.HasField("act_result"):
                            assert event.sequence == 0
                            results.append(event.act_result)
                    if len(results) >= 3:
                        break
            call.cancel()
            assert [r.accepted for r in results] == [False, True, False]
            assert results[0].code == Code.INVALID_ARGUMENT.value[0]
            assert "option 99999" in results[0].message
            assert results[2].code == Code.INVALID_ARGUMENT.value[0]
    run(go())


def test_tokens(server):
    async def go() -> None:
        async with opened(server) as m:
            stub = pb_grpc.SeatStub(m.channel)
            for meta in [(), (("seat-token", "not-a-token"),), (("seat-token", ""),),
                         (("organiser-key", server.organiser_key),)]:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.Join(pb.JoinRequest(name="x"), metadata=meta, timeout=10)
                assert caught.value.code() == Code.UNAUTHENTICATED
                assert "seat-token" in caught.value.details()
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.Act(pb.ActRequest(decision_id=m.decision.decision_id, option=0),
                                   metadata=meta, timeout=10)
                assert caught.value.code() == Code.UNAUTHENTICATED
            # A token of another match acts for nothing here.
            other = await create_match(m.channel, server.organiser_key, 2)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.Act(pb.ActRequest(decision_id=m.decision.decision_id, option=0),
                               metadata=seat_metadata(other.seat_tokens[m.seat]), timeout=10)
            assert caught.value.code() in (Code.FAILED_PRECONDITION, Code.PERMISSION_DENIED)
            reply = await stub.Join(pb.JoinRequest(name="me"),
                                    metadata=seat_metadata(m.created.seat_tokens[1]), timeout=10)
            assert (reply.match_id, reply.seat, reply.players) == (m.created.match_id, 1, 2)
            assert reply.deadline_ms == 60_000
            assert len(set(m.created.seat_tokens)) == 2
            assert all(len(t) >= 22 for t in m.created.seat_tokens)   # >= 128 bits
    run(go())


def test_organiser_key_and_bad_matches(server):
    async def go() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = pb_grpc.OrganiserStub(channel)
            req = pb.CreateMatchRequest(players=2)
            for meta, code in [((), Code.UNAUTHENTICATED),
                               ((("organiser-key", "wrong"),), Code.PERMISSION_DENIED)]:
                for call in (stub.CreateMatch(req, metadata=meta, timeout=10),
                             stub.ListMatches(pb.ListMatchesRequest(), metadata=meta, timeout=10),
                             stub.GetRecord(pb.GetRecordRequest(match_id="m"), metadata=meta,
                                            timeout=10)):
                    with pytest.raises(grpc.aio.AioRpcError) as caught:
                        await call
                    assert caught.value.code() == code
            key = (("organiser-key", server.organiser_key),)
            for bad, words in [(pb.CreateMatchRequest(players=7), "R-SETUP-1"),
                               (pb.CreateMatchRequest(players=2, colours=["red", "red"]),
                                "R-SETUP-1"),
                               (pb.CreateMatchRequest(players=2, first_player=2), "R-SETUP-6"),
                               (pb.CreateMatchRequest(players=2, names=["a", "b", "c"]),
                                "names"),
                               (pb.CreateMatchRequest(players=2, time_control=pb.TimeControl(
                                   deadline_ms=3_600_000)), "deadline_ms"),
                               (pb.CreateMatchRequest(players=2, time_control=pb.TimeControl(
                                   time_bank_ms=4_000_000_000)), "time_bank_ms")]:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.CreateMatch(bad, metadata=key, timeout=10)
                assert caught.value.code() == Code.INVALID_ARGUMENT
                assert words in caught.value.details()
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.GetRecord(pb.GetRecordRequest(match_id="m-nope"), metadata=key,
                                     timeout=10)
            assert caught.value.code() == Code.NOT_FOUND
            created = await stub.CreateMatch(pb.CreateMatchRequest(players=2, names=["a", "b"]),
                                             metadata=key, timeout=10)
            listed = await stub.ListMatches(pb.ListMatchesRequest(limit=5), metadata=key,
                                            timeout=10)
            assert listed.matches[0].match_id == created.match_id
            assert listed.matches[0].status == pb.MATCH_STATUS_WAITING
            assert list(listed.matches[0].names) == ["a", "b"]
            so_far = await stub.GetRecord(pb.GetRecordRequest(match_id=created.match_id),
                                          metadata=key, timeout=10)
            assert created.match_id in so_far.json
            spectate = pb_grpc.SpectateStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await spectate.GetRecord(pb.GetRecordRequest(match_id=created.match_id),
                                         timeout=10)
            assert caught.value.code() == Code.FAILED_PRECONDITION
            for call in (spectate.GetRecord(pb.GetRecordRequest(match_id="m-nope"), timeout=10),
                         spectate.Watch(pb.WatchRequest(match_id="m-nope"), timeout=10).read()):
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await call
                assert caught.value.code() == Code.NOT_FOUND
    run(go())


def test_garbage_requests_leave_the_server_serving(server):
    async def go() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2)
            meta = seat_metadata(created.seat_tokens[0])
            # Oversized: beyond the request size limit.
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await pb_grpc.SeatStub(channel).Join(pb.JoinRequest(name="x" * (2 << 20)),
                                                     metadata=meta, timeout=10)
            assert caught.value.code() == Code.RESOURCE_EXHAUSTED
            # A name too long for a seat.
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await pb_grpc.SeatStub(channel).Join(pb.JoinRequest(name="x" * 65),
                                                     metadata=meta, timeout=10)
            assert caught.value.code() == Code.INVALID_ARGUMENT
            # Bytes that are no protobuf message at all.
            raw = channel.unary_unary("/mammamia.v1.Seat/Act")
            for junk in (b"\xff\xff\xff\xff", b"\x0a\x05ab", b"\x12"):
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await raw(junk, metadata=meta, timeout=10)
                assert caught.value.code() != Code.OK
            # An unknown method.
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await channel.unary_unary("/mammamia.v1.Seat/Cheat")(b"", timeout=10)
            assert caught.value.code() == Code.UNIMPLEMENTED
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
    run(go())
    assert server.running


def test_health_and_reflection(server):
    async def go() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            for service in ("", "mammamia.v1.Seat", "mammamia.v1.Organiser"):
                reply = await health.Check(health_pb2.HealthCheckRequest(service=service),
                                           timeout=10)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            call = stub.ServerReflectionInfo(iter([
                reflection_pb2.ServerReflectionRequest(list_services="")]))
            names = set()
            async for reply in call:
                names = {s.name for s in reply.list_services_response.service}
                break
            assert {"mammamia.v1.Seat", "mammamia.v1.Spectate",
                    "mammamia.v1.Organiser"} <= names
    run(go())
