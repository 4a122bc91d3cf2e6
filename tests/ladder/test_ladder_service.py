"""The Ladder service's refusals, each with its status code and a message naming the input."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from tests.conftest import RunningServer


@pytest.fixture
def ladder(server: RunningServer) -> Iterator[pb_grpc.LadderStub]:
    with grpc.insecure_channel(server.address) as channel:
        yield pb_grpc.LadderStub(channel)


def refusal(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


def first_assignment(ladder: pb_grpc.LadderStub, name: str, key: str) -> object:
    return next(
        iter(ladder.Enter(pb.EnterRequest(name=name), metadata=(("bot-key", key),), timeout=3))
    )


def test_register_gives_a_key_once_per_name(ladder: pb_grpc.LadderStub) -> None:
    reply = ladder.Register(pb.RegisterRequest(name="ada"), timeout=10)
    assert reply.name == "ada" and len(reply.key) >= 40
    e = refusal(lambda: ladder.Register(pb.RegisterRequest(name="ada"), timeout=10))
    assert e.code() == grpc.StatusCode.ALREADY_EXISTS and "'ada'" in (e.details() or "")


@pytest.mark.parametrize("name", ["", "has space", "x" * 33, "semi;colon"])
def test_register_refuses_bad_names(ladder: pb_grpc.LadderStub, name: str) -> None:
    e = refusal(lambda: ladder.Register(pb.RegisterRequest(name=name), timeout=10))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and repr(name) in (e.details() or "")


def test_enter_needs_the_right_key(ladder: pb_grpc.LadderStub) -> None:
    key = ladder.Register(pb.RegisterRequest(name="bob"), timeout=10).key
    e = refusal(lambda: next(iter(ladder.Enter(pb.EnterRequest(name="bob"), timeout=3))))
    assert e.code() == grpc.StatusCode.UNAUTHENTICATED and "bot-key" in (e.details() or "")
    e = refusal(lambda: first_assignment(ladder, "bob", key[:-1]))
    assert e.code() == grpc.StatusCode.PERMISSION_DENIED and "'bob'" in (e.details() or "")
    e = refusal(lambda: first_assignment(ladder, "nobody", key))
    assert e.code() == grpc.StatusCode.PERMISSION_DENIED
    # The right key enters: alone on the ladder, the bot waits (no assignment in time).
    e = refusal(lambda: first_assignment(ladder, "bob", key))
    assert e.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_a_newer_entry_of_the_same_bot_takes_over(ladder: pb_grpc.LadderStub) -> None:
    key = ladder.Register(pb.RegisterRequest(name="twice"), timeout=10).key
    metadata = (("bot-key", key),)
    older = ladder.Enter(pb.EnterRequest(name="twice"), metadata=metadata, timeout=10)
    older.initial_metadata()  # the server has taken the first entry
    newer = ladder.Enter(pb.EnterRequest(name="twice"), metadata=metadata, timeout=10)
    newer.initial_metadata()
    e = refusal(lambda: next(iter(older)))
    assert e.code() == grpc.StatusCode.ALREADY_EXISTS and "again" in (e.details() or "")
    newer.cancel()


def test_two_entered_bots_are_assigned_seats_of_one_match(
    ladder: pb_grpc.LadderStub, server: RunningServer
) -> None:
    keys = {n: ladder.Register(pb.RegisterRequest(name=n), timeout=10).key for n in ("p", "q")}
    streams = {
        n: ladder.Enter(pb.EnterRequest(name=n), metadata=(("bot-key", k),), timeout=10)
        for n, k in keys.items()
    }
    got = {n: next(iter(s)) for n, s in streams.items()}
    for s in streams.values():
        s.cancel()
    assert got["p"].match_id == got["q"].match_id
    assert {got["p"].seat, got["q"].seat} == {0, 1}
    assert got["p"].players == 2 and got["p"].seat_token != got["q"].seat_token
    # A bot that comes back while its match runs is told its seat again.
    again = first_assignment(ladder, "p", keys["p"])
    assert again == got["p"]
    # The record is not public while the match runs (its seats have not even joined).
    e = refusal(
        lambda: ladder.GetRecord(pb.GetRecordRequest(match_id=got["p"].match_id), timeout=10)
    )
    assert e.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_reading_refusals(ladder: pb_grpc.LadderStub) -> None:
    e = refusal(lambda: ladder.GetRecord(pb.GetRecordRequest(match_id="no-such"), timeout=10))
    assert e.code() == grpc.StatusCode.NOT_FOUND and "'no-such'" in (e.details() or "")
    e = refusal(lambda: ladder.Standings(pb.StandingsRequest(players=6), timeout=10))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and "R-SETUP-1" in (e.details() or "")
    empty = ladder.Standings(pb.StandingsRequest(), timeout=10)
    assert empty.matches_finished == 0 and not empty.standings
    assert not ladder.Matches(pb.MatchesRequest(name="nobody"), timeout=10).matches
