"""A refused call is the caller's own outcome: whatever a caller sends (a bad name, a
taken name, a wrong key, an unknown id, a call past a quota or before its time),
health stays SERVING for every service. Only failures of the database itself make
it NOT_SERVING (tests/server/test_database_faults.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import create_match, seat_metadata
from .outcomes import TIMEOUT_S, Outcome, requests_then_wait, streamed, unary

if TYPE_CHECKING:
    from tests.conftest import RunningServer

Code = grpc.StatusCode
SERVICES = ("", *(s.full_name for s in pb.DESCRIPTOR.services_by_name.values()))


async def _health(channel: grpc.aio.Channel) -> dict[str, int]:
    """Returns each service's health status."""
    stub = health_pb2_grpc.HealthStub(channel)
    found: dict[str, int] = {}
    for name in SERVICES:
        reply = await stub.Check(  # type: ignore[attr-defined]
            health_pb2.HealthCheckRequest(service=name), timeout=TIMEOUT_S
        )
        found[name] = reply.status
    return found


async def _first_message_not_observe(seat: pb_grpc.SeatAsyncStub, token: str) -> Outcome:
    done = asyncio.Event()
    try:
        return await streamed(
            seat.Play(
                requests_then_wait([pb.PlayRequest(act=pb.ActRequest(decision_id="d"))], done),
                metadata=seat_metadata(token),
                timeout=TIMEOUT_S,
            )
        )
    finally:
        done.set()


def test_refused_calls_of_every_kind_leave_every_service_serving(
    start_server: Callable[..., RunningServer],
) -> None:
    # Small quotas, so that a call past each is among the refusals.
    server = start_server(ladder_players="2-3", ladder_max_unentered=2, register_rate="6/minute")

    async def go() -> list[str]:
        wrong: list[str] = []
        async with grpc.aio.insecure_channel(server.address) as channel:
            seat = pb_grpc.SeatStub(channel)
            spectate = pb_grpc.SpectateStub(channel)
            organise = pb_grpc.OrganiserStub(channel)
            ladder = pb_grpc.LadderStub(channel)
            key = (("organiser-key", server.organiser_key),)
            created = await create_match(channel, server.organiser_key, 2, seed=3)
            mine = seat_metadata(created.seat_tokens[0])
            registered = await ladder.Register(pb.RegisterRequest(name="alpha"))
            undecodable = channel.unary_unary(
                "/mammamia.v1.Ladder/Register",
                request_serializer=lambda raw: raw,
                response_deserializer=pb.RegisterResponse.FromString,
            )
            refusals: list[tuple[str, Code, Callable[[], Awaitable[Outcome]]]] = [
                # The issue's own: a name one character too long, a taken name.
                (
                    "Register 33 characters",
                    Code.INVALID_ARGUMENT,
                    lambda: unary(ladder.Register(pb.RegisterRequest(name="a" * 33))),
                ),
                (
                    "Register taken",
                    Code.ALREADY_EXISTS,
                    lambda: unary(ladder.Register(pb.RegisterRequest(name="alpha"))),
                ),
                (
                    "Register empty",
                    Code.INVALID_ARGUMENT,
                    lambda: unary(ladder.Register(pb.RegisterRequest(name=""))),
                ),
                (
                    "Register undecodable",
                    Code.INVALID_ARGUMENT,
                    lambda: unary(undecodable(b"\x0a\x02\xff\xfe", timeout=TIMEOUT_S)),
                ),
                (
                    "Register past max unentered",
                    Code.RESOURCE_EXHAUSTED,
                    lambda: unary(_register_past_the_bound(ladder)),
                ),
                (
                    "Register past its rate",
                    Code.RESOURCE_EXHAUSTED,
                    lambda: unary(ladder.Register(pb.RegisterRequest(name="zeta"))),
                ),
                (
                    "Enter without key",
                    Code.UNAUTHENTICATED,
                    lambda: streamed(ladder.Enter(pb.EnterRequest(name="alpha"))),
                ),
                (
                    "Enter wrong key",
                    Code.PERMISSION_DENIED,
                    lambda: streamed(
                        ladder.Enter(
                            pb.EnterRequest(name="alpha"), metadata=(("bot-key", "0" * 64),)
                        )
                    ),
                ),
                (
                    "Enter unknown bot",
                    Code.PERMISSION_DENIED,
                    lambda: streamed(
                        ladder.Enter(
                            pb.EnterRequest(name="nobody"), metadata=(("bot-key", registered.key),)
                        )
                    ),
                ),
                (
                    "Standings players",
                    Code.INVALID_ARGUMENT,
                    lambda: unary(ladder.Standings(pb.StandingsRequest(players=6))),
                ),
                (
                    "Ladder GetRecord unknown",
                    Code.NOT_FOUND,
                    lambda: unary(ladder.GetRecord(pb.GetRecordRequest(match_id="m-none"))),
                ),
                (
                    "BotStats unknown",
                    Code.NOT_FOUND,
                    lambda: unary(ladder.BotStats(pb.BotStatsRequest(name="nobody"))),
                ),
                (
                    "Results page token",
                    Code.INVALID_ARGUMENT,
                    lambda: unary(ladder.Results(pb.ResultsRequest(page_token="forged"))),
                ),
                (
                    "Join unknown token",
                    Code.UNAUTHENTICATED,
                    lambda: unary(seat.Join(pb.JoinRequest(), metadata=seat_metadata("nope"))),
                ),
                (
                    "Join name too long",
                    Code.INVALID_ARGUMENT,
                    lambda: unary(seat.Join(pb.JoinRequest(name="n" * 65), metadata=mine)),
                ),
                (
                    "Observe without token",
                    Code.UNAUTHENTICATED,
                    lambda: streamed(seat.Observe(pb.ObserveRequest())),
                ),
                (
                    "Act malformed",
                    Code.INVALID_ARGUMENT,
                    lambda: unary(seat.Act(pb.ActRequest(decision_id="d"), metadata=mine)),
                ),
                (
                    "Act unknown decision",
                    Code.FAILED_PRECONDITION,
                    lambda: unary(
                        seat.Act(pb.ActRequest(decision_id="d-none", option=0), metadata=mine)
                    ),
                ),
                (
                    "Play first message an act",
                    Code.INVALID_ARGUMENT,
                    lambda: _first_message_not_observe(seat, created.seat_tokens[1]),
                ),
                (
                    "Watch unknown match",
                    Code.NOT_FOUND,
                    lambda: streamed(spectate.Watch(pb.WatchRequest(match_id="m-none"))),
                ),
                (
                    "Spectate GetRecord running",
                    Code.FAILED_PRECONDITION,
                    lambda: unary(
                        spectate.GetRecord(pb.GetRecordRequest(match_id=created.match_id))
                    ),
                ),
                (
                    "Spectate GetRecord unknown",
                    Code.NOT_FOUND,
                    lambda: unary(spectate.GetRecord(pb.GetRecordRequest(match_id="m-none"))),
                ),
                (
                    "CreateMatch without key",
                    Code.UNAUTHENTICATED,
                    lambda: unary(organise.CreateMatch(pb.CreateMatchRequest(players=2))),
                ),
                (
                    "CreateMatch wrong key",
                    Code.PERMISSION_DENIED,
                    lambda: unary(
                        organise.CreateMatch(
                            pb.CreateMatchRequest(players=2), metadata=(("organiser-key", "wrong"),)
                        )
                    ),
                ),
                (
                    "CreateMatch players",
                    Code.INVALID_ARGUMENT,
                    lambda: unary(
                        organise.CreateMatch(pb.CreateMatchRequest(players=7), metadata=key)
                    ),
                ),
                (
                    "CreateMatch colours",
                    Code.INVALID_ARGUMENT,
                    lambda: unary(
                        organise.CreateMatch(
                            pb.CreateMatchRequest(players=2, colours=["red", "red"]), metadata=key
                        )
                    ),
                ),
                (
                    "CreateMatch unknown place",
                    Code.INVALID_ARGUMENT,
                    lambda: unary(
                        organise.CreateMatch(
                            pb.CreateMatchRequest(players=2, places=["p1", "p2"]), metadata=key
                        )
                    ),
                ),
                (
                    "CreateMatch first player",
                    Code.INVALID_ARGUMENT,
                    lambda: unary(
                        organise.CreateMatch(
                            pb.CreateMatchRequest(players=2, first_player=4), metadata=key
                        )
                    ),
                ),
                (
                    "ListMatches wrong key",
                    Code.PERMISSION_DENIED,
                    lambda: unary(
                        organise.ListMatches(
                            pb.ListMatchesRequest(), metadata=(("organiser-key", "wrong"),)
                        )
                    ),
                ),
                (
                    "Organiser GetRecord unknown",
                    Code.NOT_FOUND,
                    lambda: unary(
                        organise.GetRecord(pb.GetRecordRequest(match_id="m-none"), metadata=key)
                    ),
                ),
            ]
            serving = {name: health_pb2.HealthCheckResponse.SERVING for name in SERVICES}
            assert await _health(channel) == serving
            for what, code, call in refusals:
                outcome = await call()
                if outcome.code is not code:
                    wrong.append(f"{what}: {outcome.code.name} {outcome.details!r}")
                # The refused writes have reached the writer thread by the time the
                # call is answered; its health change (if any) is set on the loop.
                await asyncio.sleep(0.05)
                if (health := await _health(channel)) != serving:
                    wrong.append(f"{what}: health {health}")
        return wrong

    assert asyncio.run(go()) == []
    assert "storage_failing" not in server.logs()


async def _register_past_the_bound(ladder: pb_grpc.LadderAsyncStub) -> pb.RegisterResponse:
    """Registers a second name that never entered (the bound is 2), then a third,
    which is refused; returns the third's response."""
    await ladder.Register(pb.RegisterRequest(name="beta"))
    return await ladder.Register(pb.RegisterRequest(name="gamma"))
