"""End to end: real bots play the ladder on a real server; standings, records, rerate."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from mammamia import loads
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .conftest import MAMMAMIA, finished_at_least, query, standings, wait_until

if TYPE_CHECKING:
    from tests.conftest import RunningServer

SIX = {
    "random-1": "random",
    "random-2": "random",
    "greedy-1": "greedy",
    "greedy-2": "greedy",
    "counter-1": "counter",
    "counter-2": "counter",
}


def test_six_bots_play_thirty_rated_matches_and_counter_is_rated_above_random(
    start_server: Callable[..., RunningServer],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    server = start_server(ladder_concurrency=3, ladder_players="2-5")
    ladder_bots(server.address, SIX)
    wait_until(finished_at_least(server.address, 30), 120, "30 rated ladder matches")

    table = standings(server.address)
    names = [s.name for s in table.standings]
    assert sorted(names) == sorted(SIX)
    assert [s.rank for s in table.standings] == [1, 2, 3, 4, 5, 6]
    ratings = [s.rating for s in table.standings]
    assert ratings == sorted(ratings, reverse=True)
    for s in table.standings:
        assert abs(s.rating - (s.mu - 3 * s.sigma)) < 1e-9
        assert s.games > 0 and 0 <= s.wins <= s.games

    # Counter keeps a full account of the public cards; random does not (counter wins
    # about 74% of three-player games against random's 4%). Compared on the skill
    # estimates (mu), averaged per bot kind: the ranks go by mu - 3 sigma, where sigma
    # also reflects how many of the 30 matches a bot happened to play, and one lucky
    # random bot could outrank a counter bot on them.
    mu = {s.name: s.mu for s in table.standings}
    assert mu["counter-1"] + mu["counter-2"] > mu["random-1"] + mu["random-2"], mu

    with grpc.insecure_channel(server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        recent = ladder.Matches(pb.MatchesRequest(name="counter-1", limit=5), timeout=10).matches
        assert 1 <= len(recent) <= 5
        for m in recent:
            assert m.ladder and "counter-1" in m.names and 2 <= m.players <= 5
            assert m.status == pb.MATCH_STATUS_FINISHED and m.winners
        # Any finished ladder match's record is public, and replays to its winners.
        record = ladder.GetRecord(pb.GetRecordRequest(match_id=recent[0].match_id), timeout=10)
        state = loads(record.json).replay()
        assert state.is_over and list(state.winners()) == list(recent[0].winners)
        per_count = ladder.Standings(pb.StandingsRequest(players=2), timeout=10)
        assert per_count.matches_finished <= table.matches_finished

    assert server.stop() == 0
    # Games are counted once per seat of each rated match.
    (seats,) = query(server.db_path, "SELECT SUM(players) FROM ladder_matches WHERE rated = 1")[0]
    final = query(server.db_path, "SELECT COUNT(*) FROM ladder_matches WHERE rated = 1")[0][0]
    assert final >= 30 and seats >= 60
    # Each seat's position in round 1's order, from the seat that began it (which the
    # match's result names), agrees with the stored record.
    placed = query(
        server.db_path,
        "SELECT r.match_id, r.seat, r.position, m.players, s.record FROM ladder_results r"
        " JOIN ladder_matches m ON m.match_id = r.match_id"
        " JOIN matches s ON s.id = r.match_id WHERE m.rated = 1",
    )
    assert len(placed) == seats
    for match_id, seat, position, players, record in placed:
        first = loads(record).first_player
        assert first is not None and position == (seat - first) % players + 1, match_id
    rerate = subprocess.run(
        [str(MAMMAMIA), "ladder", "rerate", "--db", str(server.db_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rerate.returncode == 0, rerate.stdout + rerate.stderr
    assert "rerate agrees with the stored ratings" in rerate.stdout

    out = subprocess.run(
        [str(MAMMAMIA), "ladder", "standings", "--server", server.address, "--json"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 1 and "UNAVAILABLE" in out.stderr  # the server has stopped


def test_ladder_commands_print_standings_matches_and_records(
    start_server: Callable[..., RunningServer],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    server = start_server(ladder_concurrency=2, ladder_players="2-3")
    ladder_bots(server.address, {"random-a": "random", "greedy-a": "greedy", "greedy-b": "greedy"})
    wait_until(finished_at_least(server.address, 3), 60, "3 rated ladder matches")
    out = subprocess.run(
        [str(MAMMAMIA), "ladder", "standings", "--server", server.address, "--json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    data = json.loads(out.stdout)
    assert data["matches_finished"] >= 3
    assert {s["name"] for s in data["standings"]} == {"random-a", "greedy-a", "greedy-b"}
    assert set(data["standings"][0]) == {
        "rank",
        "name",
        "rating",
        "mu",
        "sigma",
        "games",
        "wins",
        "mean_delivered",
        "low",
        "high",
        "p_better",
        "suspended",
        "version",
        "versions",
        "league",
    }
    assert data["standings"][0]["suspended"] is None
    assert data["standings"][0]["league"] is None  # a ladder without leagues
    table = subprocess.run(
        [str(MAMMAMIA), "ladder", "standings", "--server", server.address, "--players", "2"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.splitlines()
    assert "2-player matches" in table[0]
    assert table[1].split() == [
        "rank",
        "name",
        "version",
        "rating",
        "mu",
        "sigma",
        "interval",
        "p>next",
        "games",
        "wins",
        "pizzas",
    ]
    assert f"--server {server.address} --ladder --name" in table[-1]
    bad = subprocess.run(
        [str(MAMMAMIA), "ladder", "standings", "--server", server.address, "--players", "7"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert bad.returncode == 2 and "--players 7" in bad.stderr

    # A bot author lists their matches and replays one from its record.
    listed = subprocess.run(
        [
            str(MAMMAMIA),
            "ladder",
            "matches",
            "--server",
            server.address,
            "--name",
            "greedy-a",
            "--limit",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.splitlines()
    assert 1 <= len(listed) <= 2
    match = json.loads(listed[0])
    assert "greedy-a" in match["names"] and match["winners"]
    record = tmp_path / "record.json"
    with open(record, "w") as written:
        subprocess.run(
            [str(MAMMAMIA), "ladder", "record", "--server", server.address, match["match"]],
            stdout=written,
            timeout=30,
            check=True,
        )
    state = json.loads(
        subprocess.run(
            [str(MAMMAMIA), "state", str(record)],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    )
    assert state["winners"] == match["winners"]
    # The assignment told the bot the match's commitment, which the record keeps and
    # the listing shows; a match played alone belongs to no set.
    committed = json.loads(record.read_text())["meta"]["fairness"]["commitment"]
    assert match["commitment"] == committed and match["set"] is None
    told = [
        json.loads(line)
        for line in (tmp_path / "bots" / "greedy-a.log").read_text().splitlines()
        if '"ladder_assignment"' in line
    ]
    assert {"match": match["match"], "commitment": committed}.items() <= next(
        a for a in told if a["match"] == match["match"]
    ).items()
    unknown = subprocess.run(
        [str(MAMMAMIA), "ladder", "record", "--server", server.address, "m-nope"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert unknown.returncode == 1 and "NOT_FOUND" in unknown.stderr
