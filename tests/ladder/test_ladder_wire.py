"""The ladder's messages (``server.ladder.wire``) and the data ``mammamia ladder``
reads from them (``server.ladder.cli_wire``): what the server sends is what the
command prints."""

from __future__ import annotations

from mammamia_pb import arena_pb2 as pb
from server.db.ladder.rows import LadderMatch, Standing
from server.ladder import cli_wire, wire
from server.ladder.lobby import Assignment
from server.status import MatchStatus


def test_ladder_messages_and_the_replies_the_commands_read() -> None:

    a = Assignment("m1", "tok", 2, 4)
    assert wire.assignment_message(a) == pb.Assignment(
        match_id="m1", seat_token="tok", seat=2, players=4
    )
    line = Standing(1, "counter-1", 20.5, 27.25, 2.25, 12, 7, 3.5)
    below = Standing(2, "random-1", 10.0, 25.0, 5.0, 12, 1, 0.5)
    reply = wire.standings_response(12, [line, below])
    reply = pb.StandingsResponse.FromString(reply.SerializeToString())
    data = cli_wire.standings_data(reply)
    assert data["matches_finished"] == 12
    assert data["standings"][0] == {
        "rank": 1,
        "name": "counter-1",
        "rating": 20.5,
        "mu": 27.25,
        "sigma": 2.25,
        "games": 12,
        "wins": 7,
        "mean_delivered": 3.5,
        "low": 22.75,
        "high": 31.75,
        "p_better": data["standings"][0]["p_better"],
        "suspended": None,
        "version": "",
        "versions": 1,
        "league": None,
    }
    assert data["leagues"] == [] and data["moves"] == []
    # mu 27.25 +- 2.25 against 25 +- 5: Phi(2.25 / sqrt(2.25**2 + 5**2)) = 0.6592...
    assert abs(data["standings"][0]["p_better"] - 0.6592) < 1e-3
    assert data["standings"][1]["p_better"] is None
    row = LadderMatch("m9", 3, MatchStatus.FINISHED, 1_700_000_000.5, ("a", "b", "c"), (0, 2))
    summary = wire.ladder_summary(row)
    assert summary.status == pb.MATCH_STATUS_FINISHED and summary.ladder
    assert summary.created.ToNanoseconds() == 1_700_000_000_500_000_000
    assert cli_wire.ladder_match_data(summary) == {
        "match": "m9",
        "players": 3,
        "names": ["a", "b", "c"],
        "winners": [0, 2],
        "commitment": "",
        "set": None,
        "voided": None,
    }
    # A suspended bot's line and a voided match say so, with the reason.
    suspended = Standing(3, "slow", 1.0, 20.0, 6.0, 4, 0, 0.0, "quarantine")
    reply = wire.standings_response(12, [line, below, suspended])
    assert cli_wire.standings_data(reply)["standings"][2]["suspended"] == "quarantine"
    voided = LadderMatch(
        "m7", 2, MatchStatus.FINISHED, 1.0, ("a", "b"), (0,), void_reason="a fault", voided_by="al"
    )
    assert cli_wire.ladder_match_data(wire.ladder_summary(voided))["voided"] == {
        "reason": "a fault",
        "by": "al",
    }
    # A match of a duplicate set: its commitment and its place in the set.
    in_set = LadderMatch(
        "m8", 3, MatchStatus.FINISHED, 1.0, ("b", "c", "a"), (1,), "c0ffee", "set-1", 1
    )
    assert cli_wire.ladder_match_data(wire.ladder_summary(in_set))["set"] == {
        "id": "set-1",
        "index": 1,
        "size": 3,
        "rotation": 1,
    }
    told = wire.assignment_message(Assignment("m8", "tok", 0, 3, "c0ffee", "set-1", 1))
    assert (told.commitment, told.deal_set.set_id, told.deal_set.rotation) == ("c0ffee", "set-1", 1)
