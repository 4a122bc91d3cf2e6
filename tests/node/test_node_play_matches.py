"""The Node.js ladder bot keeps one PlayMatches call per server for its matches:
the server sees one call for match after match; a match whose call breaks is
resumed on a Play call of its own and the next ones go on a new PlayMatches call;
a server without PlayMatches is played with Join and Play.

The bot plays through ``Relay`` (grpc_relay.py), a gRPC proxy in front of a real
server that counts the calls the bot makes, against a Python ladder bot that
plays straight to the server.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from typing import Any

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .grpc_relay import Relay

NAME = "node-tables"
RUN_TIMEOUT_S = 90
RECORD_TIMEOUT_S = 10
MATCHES = 3


@pytest.fixture
def ladder(start_server: Any, ladder_bots: Any) -> Any:
    """Returns a server with a ladder of 2-player matches and a Python random bot on it."""
    server = start_server(ladder_players="2-2")
    ladder_bots(server.address, {"py-random": "random"})
    return server


def run_node(node_bot: list[str], address: str, matches: int) -> list[tuple[str, dict[str, str]]]:
    """Returns the log (event, fields) of the Node.js ladder bot after it played
    ``matches`` assignments through ``address``; fails the test unless it exits 0."""
    done = subprocess.run(
        [*node_bot, "--server", address, "--ladder", "--name", NAME, "--matches", str(matches)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [parsed(line) for line in done.stderr.splitlines()]


def parsed(line: str) -> tuple[str, dict[str, str]]:
    """Returns a log line (`TIME LEVEL EVENT key=value ...`) as (event, fields)."""
    _, _, event, *rest = line.split(" ", 3)
    fields = {
        key: json.loads(value) if value.startswith('"') else value
        for key, value in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', " ".join(rest))
    }
    return event, fields


def by_match(log: list[tuple[str, dict[str, str]]]) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """Returns the log lines that name a match, by match, in the order assigned."""
    matches: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for event, fields in log:
        if "match" in fields:
            matches.setdefault(fields["match"], []).append((event, fields))
    return matches


def seated(lines: list[tuple[str, dict[str, str]]]) -> list[str]:
    """Returns how a match's seat was taken, in order: `seat_taken` (a `sit` on
    PlayMatches), `joined` (a first Join) or `rejoined`."""
    return [e for e, _ in lines if e in {"seat_taken", "joined", "rejoined"}]


def assert_finished_by_the_bot(server: Any, match_ids: list[str]) -> None:
    """Asserts that each match finished with every decision of the bot's seat its
    own (none taken by the server at a deadline)."""
    with grpc.insecure_channel(server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        for match_id in match_ids:
            # The bot may exit on its last MatchEnded before the ladder has stored the
            # record (NOT_FOUND) or settled the match (FAILED_PRECONDITION, "still
            # running"): read again until it shows, for at most RECORD_TIMEOUT_S.
            deadline = time.monotonic() + RECORD_TIMEOUT_S
            while True:
                try:
                    reply = ladder.GetRecord(pb.GetRecordRequest(match_id=match_id), timeout=10)
                    break
                except grpc.RpcError as e:
                    waiting = (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION)
                    if e.code() not in waiting or time.monotonic() > deadline:
                        raise
                time.sleep(0.05)
            record = json.loads(reply.json)
            seat = record["meta"]["names"].index(NAME)
            assert any(a["seat"] == seat for a in record["actions"])
            assert [t for t in record["meta"]["timeouts"] if t["seat"] == seat] == []


def test_node_ladder_bot_plays_match_after_match_on_one_play_matches_call(
    ladder: Any, node_bot: list[str]
) -> None:
    with Relay(ladder.address) as relay:
        log = run_node(node_bot, relay.address, MATCHES)
    matches = by_match(log)
    assert len(matches) == MATCHES
    for lines in matches.values():
        assert seated(lines) == ["seat_taken"]
        (ended,) = [f for e, f in lines if e == "match_ended"]
        assert ended["status"] == "finished"
    # One PlayMatches call for every match; no Join, no Play.
    assert [e for e, _ in log].count("table_opened") == 1
    assert relay.calls["PlayMatches"] == 1
    assert (relay.calls["Join"], relay.calls["Play"]) == (0, 0)
    # Each seat taken with its name and seed, and the batching bound the SDK asks for.
    assert [m.WhichOneof("message") for m in relay.starts] == ["sit"] * MATCHES
    for start in relay.starts:
        assert (start.sit.name, start.sit.after_sequence, start.sit.batch_ms) == (NAME, 0, 1000)
        assert start.sit.seat_token and start.sit.client_seed
    assert_finished_by_the_bot(ladder, list(matches))


def test_node_ladder_bot_plays_a_server_without_play_matches_on_play_calls(
    ladder: Any, node_bot: list[str]
) -> None:
    with Relay(ladder.address, without=frozenset({"PlayMatches"})) as relay:
        log = run_node(node_bot, relay.address, 2)
    events = [e for e, _ in log]
    # PlayMatches is found missing once; every match is then joined and played on Play.
    assert events.count("play_matches_unsupported") == 1
    assert relay.calls["PlayMatches"] == 1
    assert (relay.calls["Join"], relay.calls["Play"]) == (2, 2)
    assert [(m.observe.after_sequence, m.observe.batch_ms) for m in relay.starts] == [(0, 1000)] * 2
    matches = by_match(log)
    assert len(matches) == 2
    for lines in matches.values():
        assert "joined" in seated(lines) and "rejoined" not in seated(lines)
        (ended,) = [f for e, f in lines if e == "match_ended"]
        assert ended["status"] == "finished"
    assert_finished_by_the_bot(ladder, list(matches))


@pytest.mark.parametrize("cut", ["unavailable", "closed"])
def test_node_ladder_bot_resumes_a_match_whose_play_matches_call_broke_on_play(
    ladder: Any, node_bot: list[str], cut: str
) -> None:
    with Relay(ladder.address, cut=cut) as relay:
        log = run_node(node_bot, relay.address, MATCHES)
    matches = by_match(log)
    first, *others = matches
    assert relay.cut_match == first and len(others) == MATCHES - 1
    # The match cut off goes on on a Play call of its own, from where the call broke.
    lines = matches[first]
    assert seated(lines) == ["seat_taken", "rejoined"]
    assert ("connection_lost" if cut == "unavailable" else "stream_closed") in [e for e, _ in lines]
    (rejoined,) = [f for e, f in lines if e == "rejoined"]
    assert int(rejoined["after_sequence"]) > 0
    # The next matches go on a new PlayMatches call.
    for match_id in others:
        assert seated(matches[match_id]) == ["seat_taken"]
    for lines in matches.values():
        (ended,) = [f for e, f in lines if e == "match_ended"]
        assert ended["status"] == "finished"
    assert relay.calls["PlayMatches"] == 2
    assert (relay.calls["Join"], relay.calls["Play"]) == (1, 1)
    resumed = [m.observe for m in relay.starts if m.WhichOneof("message") == "observe"]
    assert [m.after_sequence for m in resumed] == [int(rejoined["after_sequence"])]
    assert_finished_by_the_bot(ladder, list(matches))
