"""Scrimmages (``Ladder.Challenge``, ``mammamia ladder challenge``) on a real server
with real bot processes: the table comes back, the records are kept and served, the
standings do not move; the refusals; a scrimmage run as the sequential test stops
at its decision."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import pytest

from mammamia.record import loads
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from tests.ports import restartable_port

from .conftest import MAMMAMIA, query, standings, wait_until

if TYPE_CHECKING:
    from tests.conftest import RunningServer


def _key(tmp_path: Path, name: str) -> str:
    return (tmp_path / f"{name}.key").read_text(encoding="utf-8").split()[0]


def _entered(db: Path, names: list[str]) -> Callable[[], bool]:
    """Returns a predicate: every one of ``names`` has entered (its key file written,
    its first entry recorded)."""

    def check() -> bool:
        rows = query(db, "SELECT name FROM ladder_bots WHERE entered IS NOT NULL")
        return set(names) <= {r[0] for r in rows}

    return check


def _in_lobby(address: str, key: str, name: str, opponents: list[str]) -> Callable[[], bool]:
    """Returns a predicate: ``name`` and ``opponents`` wait in the ladder's lobby. (A
    Challenge for a version not entered is refused only once every bot is found
    entered; a refused Challenge starts nothing.)"""

    def check() -> bool:
        request = pb.ChallengeRequest(name=name, version="probe", opponents=opponents)
        refused = _refusal(address, key, request)
        return "version 'probe'" in str(refused.details())

    return check


def _challenge(
    address: str, key: str, request: pb.ChallengeRequest, timeout: float = 120
) -> list[pb.ScrimmageReport]:
    with grpc.insecure_channel(address) as channel:
        return list(
            pb_grpc.LadderStub(channel).Challenge(
                request, metadata=(("bot-key", key),), timeout=timeout
            )
        )


def _refusal(address: str, key: str, request: pb.ChallengeRequest) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as refused:
        _challenge(address, key, request, timeout=30)
    return refused.value


def test_a_scrimmage_returns_its_table_keeps_its_records_and_rates_nothing(
    start_server: Callable[..., RunningServer],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    # One ladder match an hour each: once one match is rated, the three bots wait
    # unseated (two spent, one alone), so the standings hold still from then on.
    server = start_server(ladder_players="2", ladder_quota_matches=1, ladder_quota_scrimmages=2)
    ladder_bots(server.address, {"mine": "greedy", "opp-a": "random", "opp-b": "random"})
    wait_until(_entered(server.db_path, ["mine", "opp-a", "opp-b"]), 60, "three entries")
    wait_until(lambda: standings(server.address).matches_finished >= 1, 60, "a rated match")
    before = standings(server.address)
    key = _key(tmp_path, "mine")
    wait_until(_in_lobby(server.address, key, "mine", ["opp-a", "opp-b"]), 60, "the lobby")

    # Through the command: progress on stderr, the table on stdout.
    done = subprocess.run(
        [
            str(MAMMAMIA),
            "ladder",
            "challenge",
            "--server",
            server.address,
            "--name",
            "mine",
            "--key-file",
            str(tmp_path / "mine.key"),
            "--matches",
            "4",
            "--json",
            "opp-a",
            "opp-b",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["played"], data["planned"], data["done"], data["stopped"]) == (4, 4, True, None)
    assert [line["name"] for line in data["table"]] == ["mine", "opp-a", "opp-b"]
    mine, opp_a, opp_b = data["table"]
    assert mine["games"] == 4 and opp_a["games"] == 2 and opp_b["games"] == 2
    # Two players: each match has one winner (or a shared first), so the wins add up.
    assert mine["wins"] + opp_a["wins"] + opp_b["wins"] >= 4
    for line in data["table"]:
        assert line["low"] <= line["win_rate"] <= line["high"]
        assert line["win_rate"] == pytest.approx(line["wins"] / line["games"])
    assert len(done.stderr.strip().splitlines()) == 4  # started, then a line a match but the last

    # Each match seated the challenger and one opponent in turn, its seat turning.
    matches = data["matches"]
    assert [m["status"] for m in matches] == ["finished"] * 4
    assert [sorted(n.split("@")[0] for n in m["names"]) for m in matches] == [
        ["mine", "opp-a"],
        ["mine", "opp-b"],
        ["mine", "opp-a"],
        ["mine", "opp-b"],
    ]
    assert [m["names"][0].split("@")[0] for m in matches] == ["mine", "opp-b", "mine", "opp-b"]

    # The records are kept and served; the scrimmage is kept apart from the ladder.
    ids = [m["match_id"] for m in matches]
    with grpc.insecure_channel(server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        for match_id, m in zip(ids, matches, strict=True):
            record = loads(
                ladder.GetRecord(pb.GetRecordRequest(match_id=match_id), timeout=10).json
            )
            assert record.meta["ranks"] == m["ranks"]
            assert record.meta["names"] == [n.split("@")[0] for n in m["names"]]
        listed = ladder.Matches(pb.MatchesRequest(page_size=100), timeout=10)
        results = ladder.Results(pb.ResultsRequest(page_size=100), timeout=10)
    assert not {m.match_id for m in listed.matches} & set(ids)
    assert not {m.match_id for m in results.matches} & set(ids)
    assert query(
        server.db_path, "SELECT COUNT(*) FROM ladder_matches WHERE match_id IN (?, ?)", *ids[:2]
    ) == [(0,)]
    kept = query(
        server.db_path,
        "SELECT s.status, s.reason, COUNT(m.match_id) FROM ladder_scrimmages s"
        " JOIN scrimmage_matches m ON m.scrimmage_id = s.scrimmage_id GROUP BY s.scrimmage_id",
    )
    assert kept == [("complete", None, 4)]

    # Nothing was rated: the standings are as they were.
    assert standings(server.address) == before

    # Three players: both opponents at every table, in duplicate (a deal a rotation).
    reports = _challenge(
        server.address,
        key,
        pb.ChallengeRequest(
            name="mine", opponents=["opp-a", "opp-b"], players=3, matches=3, duplicate=True
        ),
    )
    last = reports[-1]
    assert last.done and last.played == 3 and not last.stopped
    assert [line.games for line in last.lines] == [3, 3, 3]
    assert sum(line.wins for line in last.lines) >= 3
    seats = [[n.split("@")[0] for n in m.names] for m in last.matches]
    assert seats == [
        ["mine", "opp-a", "opp-b"],
        ["opp-b", "mine", "opp-a"],
        ["opp-a", "opp-b", "mine"],
    ]
    # One deal, its records completed with its seed once its last match ended.
    with grpc.insecure_channel(server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        records = [
            loads(ladder.GetRecord(pb.GetRecordRequest(match_id=m.match_id), timeout=10).json)
            for m in last.matches
        ]
    assert len({r.seed for r in records}) == 1 and records[0].seed is not None
    assert standings(server.address) == before

    # The quota of two an hour is spent.
    refused = _refusal(server.address, key, pb.ChallengeRequest(name="mine", opponents=["opp-a"]))
    assert refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "2 an hour" in str(refused.details())

    # Both are listed, newest first, each with its last report, a page at a time.
    with grpc.insecure_channel(server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        first = ladder.Scrimmages(pb.ScrimmagesRequest(name="mine", page_size=1), timeout=10)
        second = ladder.Scrimmages(
            pb.ScrimmagesRequest(name="mine", page_size=1, page_token=first.next_page_token),
            timeout=10,
        )
        others = ladder.Scrimmages(pb.ScrimmagesRequest(name="opp-a"), timeout=10)
    assert len(first.scrimmages) == len(second.scrimmages) == 1 and not second.next_page_token
    newest, oldest = first.scrimmages[0], second.scrimmages[0]
    assert (newest.players, newest.duplicate, list(newest.opponents)) == (
        3,
        True,
        ["opp-a", "opp-b"],
    )
    assert newest.report == last  # the report the call ended with
    assert (
        newest.HasField("ended") and newest.ended.ToNanoseconds() >= newest.created.ToNanoseconds()
    )
    assert oldest.report.scrimmage_id == data["scrimmage"]
    assert [m.match_id for m in oldest.report.matches] == ids
    assert not others.scrimmages  # the scrimmages mine asked for, not those it was asked to
    printed = subprocess.run(
        [str(MAMMAMIA), "ladder", "scrimmages", "--server", server.address, "--name", "mine"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert printed.stdout.count("against opp-a, opp-b") == 2 and "complete" in printed.stdout


def test_refusals_are_clear(
    start_server: Callable[..., RunningServer],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    # Five players a match: the two bots entered are never seated by the ladder.
    server = start_server(ladder_players="5")
    ladder_bots(server.address, {"mine": "random", "rival": "random"})
    wait_until(_entered(server.db_path, ["mine", "rival"]), 60, "two entries")
    key = _key(tmp_path, "mine")
    wait_until(_in_lobby(server.address, key, "mine", ["rival"]), 60, "the lobby")
    with grpc.insecure_channel(server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        idle = ladder.Register(pb.RegisterRequest(name="idle"), timeout=10).key
        banned = ladder.Register(pb.RegisterRequest(name="banned"), timeout=10).key
    suspend = subprocess.run(
        [
            *(str(MAMMAMIA), "admin", "suspend", "banned", "--reason", "cheats"),
            *("--server", server.address, "--organiser-key", server.organiser_key),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert suspend.returncode == 0, suspend.stderr

    def refused(request: pb.ChallengeRequest, key: str = key) -> tuple[grpc.StatusCode, str]:
        e = _refusal(server.address, key, request)
        return e.code(), str(e.details())

    with grpc.insecure_channel(server.address) as channel, pytest.raises(grpc.RpcError) as no_key:
        list(pb_grpc.LadderStub(channel).Challenge(pb.ChallengeRequest(name="mine")))
    assert no_key.value.code() == grpc.StatusCode.UNAUTHENTICATED

    code, text = refused(pb.ChallengeRequest(name="mine", opponents=["rival"]), key="0" * 64)
    assert code == grpc.StatusCode.PERMISSION_DENIED and "key is wrong" in text
    code, text = refused(pb.ChallengeRequest(name="banned", opponents=["mine"]), key=banned)
    assert code == grpc.StatusCode.PERMISSION_DENIED and "suspended: cheats" in text

    invalid = [
        (pb.ChallengeRequest(name="mine"), "at least one opponent"),
        (pb.ChallengeRequest(name="mine", opponents=["rival", "rival"]), "named twice"),
        (pb.ChallengeRequest(name="mine", opponents=["mine"]), "its own opponent"),
        (pb.ChallengeRequest(name="mine", opponents=["rival"], players=6), "players 6: 2 to 5"),
        (pb.ChallengeRequest(name="mine", opponents=["rival"], players=3), "more seats"),
        (pb.ChallengeRequest(name="mine", opponents=["rival"], matches=201), "1 to 200"),
        (
            pb.ChallengeRequest(name="mine", opponents=["rival"], matches=3, duplicate=True),
            "a multiple of 2",
        ),
        (
            pb.ChallengeRequest(name="mine", opponents=["rival", "idle"], sprt=pb.ScrimmageSprt()),
            "one opponent",
        ),
        (
            pb.ChallengeRequest(
                name="mine", opponents=["rival"], sprt=pb.ScrimmageSprt(elo0=60, elo1=50)
            ),
            "must be above elo0",
        ),
    ]
    for request, said in invalid:
        code, text = refused(request)
        assert (code, said in text) == (grpc.StatusCode.INVALID_ARGUMENT, True), text

    # Opponents must be entered now: each one that is not is named.
    code, text = refused(pb.ChallengeRequest(name="mine", opponents=["rival", "idle", "nobody"]))
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert "'idle', 'nobody'" in text and "'rival'" not in text
    code, text = refused(pb.ChallengeRequest(name="idle", opponents=["mine"]), key=idle)
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "enter it first" in text
    code, text = refused(pb.ChallengeRequest(name="mine", version="v9", opponents=["rival"]))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "'v9'" in text
    # None of them was counted against the quota or left a scrimmage behind.
    assert query(server.db_path, "SELECT COUNT(*) FROM ladder_scrimmages") == [(0,)]


def test_a_scrimmage_runs_as_the_sequential_test(
    start_server: Callable[..., RunningServer],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    server = start_server(ladder_players="5")  # the ladder seats nobody meanwhile
    ladder_bots(server.address, {"counter": "counter", "random": "random"})
    wait_until(_entered(server.db_path, ["counter", "random"]), 60, "two entries")
    key = _key(tmp_path, "counter")
    wait_until(_in_lobby(server.address, key, "counter", ["random"]), 60, "the lobby")
    # A gap far wider than elo1 (counter wins nearly every game against random), and
    # error rates of 10%: the test decides "better" within a few pairs, and a wrong
    # decision is far rarer than beta.
    test = pb.ScrimmageSprt(elo0=0, elo1=100, alpha=0.1, beta=0.1)
    reports = _challenge(
        server.address,
        key,
        pb.ChallengeRequest(name="counter", opponents=["random"], matches=60, sprt=test),
        timeout=300,
    )
    last = reports[-1]
    assert last.done and last.test.decision == pb.SPRT_DECISION_BETTER
    assert last.stopped == "the test decided: better"
    assert last.test.llr >= last.test.upper == pytest.approx(2.1972, abs=1e-3)
    assert last.played == 2 * last.test.pairs < 60
    assert sum(last.test.pentanomial) == last.test.pairs
    # Every report before the last was undecided, its ratio inside the bounds.
    for report in reports[:-1]:
        assert report.test.decision == pb.SPRT_DECISION_UNSPECIFIED
        assert report.test.lower < report.test.llr < report.test.upper
    # Deal pairs, the seats swapped.
    for first, second in zip(last.matches[::2], last.matches[1::2], strict=True):
        assert list(first.names) == list(reversed(second.names))


def test_a_scrimmage_cut_off_by_a_crash_is_stopped_and_its_match_never_rated(
    start_server: Callable[..., RunningServer],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    # A fixed port, so that the bots find the server again after the crash.
    server = start_server(port=restartable_port(), ladder_players="5")
    ladder_bots(server.address, {"mine": "greedy", "rival": "random"})
    wait_until(_entered(server.db_path, ["mine", "rival"]), 60, "two entries")
    key = _key(tmp_path, "mine")
    wait_until(_in_lobby(server.address, key, "mine", ["rival"]), 60, "the lobby")
    request = pb.ChallengeRequest(name="mine", opponents=["rival"], matches=200)
    asking = threading.Thread(target=_challenge_until_cut, args=(server.address, key, request))
    asking.start()
    running = "SELECT match_id FROM scrimmage_matches WHERE status = 'running'"
    wait_until(lambda: query(server.db_path, running), 60, "a scrimmage match under way")
    server.kill()
    asking.join(timeout=30)
    server.start()

    # At the start, the scrimmage is stopped; its match cut off is resumed (or, when
    # the crash came before it was journalled, aborted) and kept when it ends.
    assert query(server.db_path, "SELECT status, reason FROM ladder_scrimmages") == [
        ("stopped", "the server restarted")
    ]
    wait_until(lambda: not query(server.db_path, running), 60, "the match cut off to be kept")
    ids = [r[0] for r in query(server.db_path, "SELECT match_id FROM scrimmage_matches")]
    assert ids
    assert query(server.db_path, "SELECT COUNT(*) FROM ladder_matches") == [(0,)]
    assert standings(server.address).matches_finished == 0
    # The name may ask again: the scrimmage cut off no longer counts as under way.
    wait_until(_in_lobby(server.address, key, "mine", ["rival"]), 60, "the bots back")
    reports = _challenge(
        server.address,
        key,
        pb.ChallengeRequest(name="mine", opponents=["rival"], matches=1),
    )
    assert reports[-1].done and reports[-1].played == 1


def _challenge_until_cut(address: str, key: str, request: pb.ChallengeRequest) -> None:
    with contextlib.suppress(grpc.RpcError):  # the server is killed under it
        _challenge(address, key, request, timeout=60)


def test_a_ladder_of_many_hosts_refuses_scrimmages(
    start_server: Callable[..., RunningServer], postgres_url: str
) -> None:
    # On PostgreSQL the lobby is the one the hosts share: its bots are seated from the
    # database, where a scrimmage cannot hold them.
    server = start_server(db=postgres_url)
    with grpc.insecure_channel(server.address) as channel:
        key = pb_grpc.LadderStub(channel).Register(pb.RegisterRequest(name="mine"), timeout=10).key
    refused = _refusal(server.address, key, pb.ChallengeRequest(name="mine", opponents=["rival"]))
    assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "a ladder of one host" in str(refused.details())


def test_a_leagues_boss_is_an_opponent_as_any(
    start_server: Callable[..., RunningServer],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    # The server plays the boss's seats itself; five players a match: no ladder match.
    server = start_server(ladder_players="5", leagues="wood=random top")
    ladder_bots(server.address, {"mine": "greedy"})
    wait_until(_entered(server.db_path, ["mine"]), 60, "an entry")
    key = _key(tmp_path, "mine")
    wait_until(_in_lobby(server.address, key, "mine", ["wood-boss"]), 60, "the lobby")
    last = _challenge(
        server.address, key, pb.ChallengeRequest(name="mine", opponents=["wood-boss"], matches=2)
    )[-1]
    assert last.done and last.played == 2 and not last.stopped
    assert [line.name for line in last.lines] == ["mine", "wood-boss"]
    # Played by the boss, not by the default policy after deadlines.
    assert "boss_failed" not in server.logs() and '"autopilot": true' not in server.logs()
