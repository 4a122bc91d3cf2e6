"""A large value in any field of any method gets the method's documented status with
a short message: a refusal quotes at most 80 characters of what the caller sent
(server/quoting.py), so it reaches a client with gRPC's default limits as its own
code, never as RESOURCE_EXHAUSTED for metadata past the client's limit.

The methods come from the generated descriptors of arena.proto: a method added
without a case here fails ``test_every_method_has_a_case``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.quoting import MESSAGE_LIMIT, QUOTE_LIMIT

from .client import create_match, seat_metadata
from .outcomes import TIMEOUT_S, Outcome, requests_then_wait, streamed, unary

if TYPE_CHECKING:
    from tests.conftest import RunningServer

Code = grpc.StatusCode

BIG = "z" * 500_000  # as large as an outside probe sent; a request under 1 MiB
TOKEN = "t" * 4000  # metadata: below the server's 8 KiB limit of a call's headers
COLOURS = ["c" * 5] * 100_000


@dataclass
class Target:
    """What the cases call: the channel's stubs, a live match's seat tokens, keys."""

    channel: grpc.aio.Channel
    organiser: tuple[tuple[str, str], ...]
    tokens: list[str]

    @property
    def seat(self) -> pb_grpc.SeatAsyncStub:
        return pb_grpc.SeatStub(self.channel)

    @property
    def spectate(self) -> pb_grpc.SpectateAsyncStub:
        return pb_grpc.SpectateStub(self.channel)

    @property
    def organise(self) -> pb_grpc.OrganiserAsyncStub:
        return pb_grpc.OrganiserStub(self.channel)

    @property
    def ladder(self) -> pb_grpc.LadderAsyncStub:
        return pb_grpc.LadderStub(self.channel)

    @property
    def competition(self) -> pb_grpc.CompetitionAsyncStub:
        return pb_grpc.CompetitionStub(self.channel)

    def mine(self) -> tuple[tuple[str, str], ...]:
        return seat_metadata(self.tokens[0])


Call = Callable[[Target], Awaitable[Outcome]]


async def _stream_of(call: Callable[[asyncio.Event], object]) -> Outcome:
    """Returns how a call with a request stream ended; its requests stay open until
    it has."""
    done = asyncio.Event()
    try:
        return await streamed(call(done))
    finally:
        done.set()


async def _act_result(target: Target, act: pb.ActRequest) -> Outcome:
    """Returns the refusal of ``act`` sent on Play after ``observe``: the ActResult's
    code and message (Play answers an act with an event, not a status)."""
    done = asyncio.Event()
    call = target.seat.Play(
        requests_then_wait(
            [pb.PlayRequest(observe=pb.ObserveRequest()), pb.PlayRequest(act=act)], done
        ),
        metadata=target.mine(),
        timeout=TIMEOUT_S,
    )
    try:
        async for message in call:
            for event in message.events:
                if event.HasField("act_result"):
                    result = event.act_result
                    return Outcome(Code(_code(result.code)), result.message)
    finally:
        done.set()
        call.cancel()
    raise AssertionError("Play ended before its act_result")


def _code(value: int) -> tuple[int, str]:
    return next(c.value for c in Code if c.value[0] == value)


def _turn(ingredient: str, order: str = "") -> pb.ActRequest:
    turn = pb.TurnAction(ingredient=ingredient, count=1, order=order)
    return pb.ActRequest(decision_id="d1", action=pb.Action(turn=turn))


def _resolve(ingredient: str) -> pb.ActRequest:
    return pb.ActRequest(
        decision_id="d1",
        action=pb.Action(resolve=pb.ResolveAction(bake=True, ingredient=ingredient)),
    )


def _sit(target: Target, name: str = "", client_seed: str = "") -> pb.PlayRequest:
    sit = pb.SitRequest(seat_token=target.tokens[1], name=name, client_seed=client_seed)
    return pb.PlayRequest(sit=sit)


def _play_matches(target: Target, *requests: pb.PlayRequest) -> Awaitable[Outcome]:
    return _stream_of(
        lambda done: target.seat.PlayMatches(requests_then_wait(requests, done), timeout=TIMEOUT_S)
    )


def _create_matches(target: Target, request: pb.CreateMatchRequest) -> Awaitable[Outcome]:
    return _stream_of(
        lambda done: target.organise.CreateMatches(
            requests_then_wait([request], done), metadata=target.organiser, timeout=TIMEOUT_S
        )
    )


# Each method's cases: (what is large, the documented status, the call).
CASES: dict[str, list[tuple[str, Code, Call]]] = {
    "Seat/Join": [
        (
            "name",
            Code.INVALID_ARGUMENT,
            lambda t: unary(t.seat.Join(pb.JoinRequest(name=BIG), metadata=t.mine())),
        ),
        (
            "client_seed",
            Code.INVALID_ARGUMENT,
            lambda t: unary(t.seat.Join(pb.JoinRequest(client_seed=BIG), metadata=t.mine())),
        ),
        (
            "seat-token",
            Code.UNAUTHENTICATED,
            lambda t: unary(t.seat.Join(pb.JoinRequest(), metadata=seat_metadata(TOKEN))),
        ),
    ],
    "Seat/Observe": [
        (
            "seat-token",
            Code.UNAUTHENTICATED,
            lambda t: streamed(t.seat.Observe(pb.ObserveRequest(), metadata=seat_metadata(TOKEN))),
        ),
    ],
    "Seat/Act": [
        (
            "decision_id",
            Code.INVALID_ARGUMENT,
            lambda t: unary(
                t.seat.Act(pb.ActRequest(decision_id=BIG, option=0), metadata=t.mine())
            ),
        ),
        (
            "turn.ingredient",
            Code.INVALID_ARGUMENT,
            lambda t: unary(t.seat.Act(_turn(ingredient=BIG), metadata=t.mine())),
        ),
        (
            "turn.order",
            Code.INVALID_ARGUMENT,
            lambda t: unary(t.seat.Act(_turn(ingredient="salami", order=BIG), metadata=t.mine())),
        ),
        (
            "resolve.ingredient",
            Code.INVALID_ARGUMENT,
            lambda t: unary(t.seat.Act(_resolve(BIG), metadata=t.mine())),
        ),
        (
            "seat-token",
            Code.UNAUTHENTICATED,
            lambda t: unary(
                t.seat.Act(pb.ActRequest(decision_id="d1", option=0), metadata=seat_metadata(TOKEN))
            ),
        ),
    ],
    "Seat/Play": [
        (
            "act.decision_id",
            Code.INVALID_ARGUMENT,
            lambda t: _act_result(t, pb.ActRequest(decision_id=BIG, option=0)),
        ),
        (
            "act.turn.ingredient",
            Code.INVALID_ARGUMENT,
            lambda t: _act_result(t, _turn(ingredient=BIG)),
        ),
        (
            "act.turn.order",
            Code.INVALID_ARGUMENT,
            lambda t: _act_result(t, _turn(ingredient="salami", order=BIG)),
        ),
        ("act.resolve.ingredient", Code.INVALID_ARGUMENT, lambda t: _act_result(t, _resolve(BIG))),
        (
            "first message an act",
            Code.INVALID_ARGUMENT,
            lambda t: _stream_of(
                lambda done: t.seat.Play(
                    requests_then_wait([pb.PlayRequest(act=_turn(ingredient=BIG))], done),
                    metadata=t.mine(),
                    timeout=TIMEOUT_S,
                )
            ),
        ),
    ],
    "Seat/PlayMatches": [
        (
            "sit.seat_token",
            Code.UNAUTHENTICATED,
            lambda t: _play_matches(t, pb.PlayRequest(sit=pb.SitRequest(seat_token=BIG))),
        ),
        ("sit.name", Code.INVALID_ARGUMENT, lambda t: _play_matches(t, _sit(t, name=BIG))),
        (
            "sit.client_seed",
            Code.INVALID_ARGUMENT,
            lambda t: _play_matches(t, _sit(t, client_seed=BIG)),
        ),
        (
            "wait.name",
            Code.INVALID_ARGUMENT,
            lambda t: _play_matches(t, pb.PlayRequest(wait=pb.WaitRequest(name=BIG))),
        ),
    ],
    "Spectate/Watch": [
        (
            "match_id",
            Code.NOT_FOUND,
            lambda t: streamed(t.spectate.Watch(pb.WatchRequest(match_id=BIG))),
        ),
    ],
    "Spectate/GetRecord": [
        (
            "match_id",
            Code.NOT_FOUND,
            lambda t: unary(t.spectate.GetRecord(pb.GetRecordRequest(match_id=BIG))),
        ),
    ],
    "Organiser/CreateMatch": [
        (
            "colours (100,000)",
            Code.INVALID_ARGUMENT,
            lambda t: unary(
                t.organise.CreateMatch(
                    pb.CreateMatchRequest(players=2, colours=COLOURS), metadata=t.organiser
                )
            ),
        ),
        (
            "colours (each large)",
            Code.INVALID_ARGUMENT,
            lambda t: unary(
                t.organise.CreateMatch(
                    pb.CreateMatchRequest(players=2, colours=[BIG[:200_000], "y" * 200_000]),
                    metadata=t.organiser,
                )
            ),
        ),
        (
            "names",
            Code.INVALID_ARGUMENT,
            lambda t: unary(
                t.organise.CreateMatch(
                    pb.CreateMatchRequest(players=2, names=[BIG]), metadata=t.organiser
                )
            ),
        ),
        (
            "places",
            Code.INVALID_ARGUMENT,
            lambda t: unary(
                t.organise.CreateMatch(
                    pb.CreateMatchRequest(players=2, places=[BIG[:200_000], "p" * 200_000]),
                    metadata=t.organiser,
                )
            ),
        ),
        (
            "organiser-key",
            Code.PERMISSION_DENIED,
            lambda t: unary(
                t.organise.CreateMatch(
                    pb.CreateMatchRequest(players=2), metadata=(("organiser-key", TOKEN),)
                )
            ),
        ),
    ],
    "Organiser/CreateMatches": [
        (
            "colours",
            Code.INVALID_ARGUMENT,
            lambda t: _create_matches(t, pb.CreateMatchRequest(players=2, colours=COLOURS)),
        ),
        (
            "names",
            Code.INVALID_ARGUMENT,
            lambda t: _create_matches(t, pb.CreateMatchRequest(players=2, names=[BIG])),
        ),
        (
            "places",
            Code.INVALID_ARGUMENT,
            lambda t: _create_matches(
                t, pb.CreateMatchRequest(players=2, places=[BIG[:200_000], "p"])
            ),
        ),
    ],
    "Organiser/ListMatches": [
        (
            "page_token",
            Code.INVALID_ARGUMENT,
            lambda t: unary(
                t.organise.ListMatches(pb.ListMatchesRequest(page_token=BIG), metadata=t.organiser)
            ),
        ),
        (
            "organiser-key",
            Code.PERMISSION_DENIED,
            lambda t: unary(
                t.organise.ListMatches(
                    pb.ListMatchesRequest(), metadata=(("organiser-key", TOKEN),)
                )
            ),
        ),
    ],
    "Organiser/GetRecord": [
        (
            "match_id",
            Code.NOT_FOUND,
            lambda t: unary(
                t.organise.GetRecord(pb.GetRecordRequest(match_id=BIG), metadata=t.organiser)
            ),
        ),
    ],
    "Ladder/Register": [
        (
            "name",
            Code.INVALID_ARGUMENT,
            lambda t: unary(t.ladder.Register(pb.RegisterRequest(name=BIG))),
        ),
    ],
    "Ladder/Enter": [
        (
            "name",
            Code.PERMISSION_DENIED,
            lambda t: streamed(
                t.ladder.Enter(pb.EnterRequest(name=BIG), metadata=(("bot-key", "k"),))
            ),
        ),
        (
            "bot-key",
            Code.PERMISSION_DENIED,
            lambda t: streamed(
                t.ladder.Enter(pb.EnterRequest(name="nobody"), metadata=(("bot-key", TOKEN),))
            ),
        ),
    ],
    "Ladder/Challenge": [
        (
            "name, opponents",
            Code.PERMISSION_DENIED,
            lambda t: streamed(
                t.ladder.Challenge(
                    pb.ChallengeRequest(name=BIG, opponents=[BIG]), metadata=(("bot-key", "k"),)
                )
            ),
        ),
        (
            "bot-key",
            Code.PERMISSION_DENIED,
            lambda t: streamed(
                t.ladder.Challenge(
                    pb.ChallengeRequest(name="nobody", version=BIG),
                    metadata=(("bot-key", TOKEN),),
                )
            ),
        ),
    ],
    "Ladder/Scrimmages": [
        (
            "name",
            Code.OK,
            lambda t: unary(t.ladder.Scrimmages(pb.ScrimmagesRequest(name=BIG))),
        ),
        (
            "page_token",
            Code.INVALID_ARGUMENT,
            lambda t: unary(t.ladder.Scrimmages(pb.ScrimmagesRequest(page_token=BIG))),
        ),
    ],
    "Ladder/Standings": [
        (
            "players (no text field)",
            Code.INVALID_ARGUMENT,
            lambda t: unary(t.ladder.Standings(pb.StandingsRequest(players=9))),
        ),
        (
            "page_token",
            Code.INVALID_ARGUMENT,
            lambda t: unary(t.ladder.Standings(pb.StandingsRequest(page_token=BIG))),
        ),
    ],
    # Matches refuses no name: an unknown name has no matches.
    "Ladder/Matches": [
        ("name", Code.OK, lambda t: unary(t.ladder.Matches(pb.MatchesRequest(name=BIG)))),
        (
            "page_token",
            Code.INVALID_ARGUMENT,
            lambda t: unary(t.ladder.Matches(pb.MatchesRequest(page_token=BIG))),
        ),
    ],
    "Ladder/Results": [
        (
            "page_token",
            Code.INVALID_ARGUMENT,
            lambda t: unary(t.ladder.Results(pb.ResultsRequest(page_token=BIG))),
        ),
    ],
    "Ladder/GetRecord": [
        (
            "match_id",
            Code.NOT_FOUND,
            lambda t: unary(t.ladder.GetRecord(pb.GetRecordRequest(match_id=BIG))),
        ),
    ],
    "Ladder/BotStats": [
        ("name", Code.NOT_FOUND, lambda t: unary(t.ladder.BotStats(pb.BotStatsRequest(name=BIG)))),
    ],
    # This server runs no competition (tests/competition: one that does).
    "Competition/Status": [
        (
            "(no field)",
            Code.FAILED_PRECONDITION,
            lambda t: unary(t.competition.Status(pb.CompetitionStatusRequest())),
        ),
    ],
    "Competition/Advance": [
        (
            "reason",
            Code.FAILED_PRECONDITION,
            lambda t: unary(
                t.competition.Advance(pb.AdvanceRequest(reason=BIG), metadata=t.organiser)
            ),
        ),
    ],
    "Competition/Release": [
        (
            "(no field)",
            Code.FAILED_PRECONDITION,
            lambda t: unary(
                t.competition.Release(pb.ReleaseResultsRequest(), metadata=t.organiser)
            ),
        ),
    ],
}


def _quotes_too_much(outcome: Outcome) -> bool:
    """Returns whether the outcome repeats more of an input than a quote may (every
    large value here is one character repeated)."""
    texts = [outcome.details, *(v for _, v in outcome.trailers if isinstance(v, str))]
    return any(re.search(rf"(.)\1{{{QUOTE_LIMIT}}}", text) for text in texts)


def test_every_method_has_a_case() -> None:
    methods = {
        f"{service.name}/{method.name}"
        for service in pb.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    }
    assert methods == set(CASES)


def test_a_large_value_in_any_field_gets_its_code_and_a_short_message(
    start_server: Callable[..., RunningServer],
) -> None:
    # No rates: every call here is counted against one address.
    server = start_server(ladder_players="2-3", register_rate="", public_rate="")

    async def go() -> list[str]:
        wrong: list[str] = []
        # The client's limits are gRPC's defaults: what real clients see.
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2, seed=11)
            target = Target(
                channel, (("organiser-key", server.organiser_key),), list(created.seat_tokens)
            )
            for method, cases in CASES.items():
                for field, code, call in cases:
                    outcome = await call(target)
                    if outcome.code is not code:
                        wrong.append(
                            f"{method} {field}: {outcome.code.name} {outcome.details[:200]!r}"
                        )
                    elif outcome.size() > MESSAGE_LIMIT or _quotes_too_much(outcome):
                        wrong.append(f"{method} {field}: {outcome.size()} characters sent back")
        return wrong

    assert asyncio.run(go()) == []


def test_an_id_or_name_holding_nul_names_nothing_on_postgresql(
    start_server: Callable[..., RunningServer], postgres_url: str
) -> None:
    # PostgreSQL's text holds no NUL character: such an id or name names nothing
    # stored, and gets the code of an unknown one (not UNKNOWN from the database).
    server = start_server(db=postgres_url, ladder_players="2-3", register_rate="", public_rate="")
    nul = "m\x00"

    async def go() -> list[tuple[str, Code]]:
        async with grpc.aio.insecure_channel(server.address) as channel:
            ladder = pb_grpc.LadderStub(channel)
            organiser = (("organiser-key", server.organiser_key),)
            organise = pb_grpc.OrganiserStub(channel)
            calls: list[tuple[str, Awaitable[Outcome]]] = [
                ("Register", unary(ladder.Register(pb.RegisterRequest(name=nul)))),
                (
                    "Enter",
                    streamed(ladder.Enter(pb.EnterRequest(name=nul), metadata=(("bot-key", "k"),))),
                ),
                ("Ladder.GetRecord", unary(ladder.GetRecord(pb.GetRecordRequest(match_id=nul)))),
                ("BotStats", unary(ladder.BotStats(pb.BotStatsRequest(name=nul)))),
                ("Matches", unary(ladder.Matches(pb.MatchesRequest(name=nul)))),
                (
                    "Spectate.GetRecord",
                    unary(
                        pb_grpc.SpectateStub(channel).GetRecord(pb.GetRecordRequest(match_id=nul))
                    ),
                ),
                (
                    "Organiser.GetRecord",
                    unary(
                        organise.GetRecord(pb.GetRecordRequest(match_id=nul), metadata=organiser)
                    ),
                ),
            ]
            return [(what, (await outcome).code) for what, outcome in calls]

    assert asyncio.run(go()) == [
        ("Register", Code.INVALID_ARGUMENT),
        ("Enter", Code.PERMISSION_DENIED),
        ("Ladder.GetRecord", Code.NOT_FOUND),
        ("BotStats", Code.NOT_FOUND),
        ("Matches", Code.OK),
        ("Spectate.GetRecord", Code.NOT_FOUND),
        ("Organiser.GetRecord", Code.NOT_FOUND),
    ]
    assert "storage_failing" not in server.logs()
