"""Discipline on a real server with real ladder bots, through `mammamia admin`: a
suspended bot cannot enter and shows as suspended, a voided match leaves the ratings
(and `ladder rerate` agrees with the live standings), an aborted match never counts,
quotas are refused with their status, and a bot too slow for its deadlines is
quarantined by the server. Every change is on the audit log with its operator."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.db.ladder.rows import player
from server.db.ladder.store import LadderStore
from server.ladder.ratings import replay
from tests.conftest import ORGANISER_KEY
from tests.ladder.conftest import MAMMAMIA, finished_at_least, query, standings, wait_until

if TYPE_CHECKING:
    from tests.conftest import RunningServer

Bots = Callable[..., dict[str, subprocess.Popen[bytes]]]

SIX = {
    "random-1": "random",
    "random-2": "random",
    "greedy-1": "greedy",
    "greedy-2": "greedy",
    "counter-1": "counter",
    "counter-2": "counter",
}

#: A bot that answers every decision too late, at the wire (the SDK would send a
#: safe answer in time for it): registers, enters, and plays each seat it is given.
SLOW_BOT = """
import queue
import sys
import threading
import time

import grpc

from client_sdk import wire
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as rpc

address, name = sys.argv[1:3]
channel = grpc.insecure_channel(address)
ladder, seats = rpc.LadderStub(channel), rpc.SeatStub(channel)
key = ladder.Register(pb.RegisterRequest(name=name), timeout=10).key


def play(token):
    metadata = (("seat-token", token),)
    seats.Join(pb.JoinRequest(name=name), metadata=metadata, timeout=10)
    out = queue.Queue()
    out.put(wire.observe(0))

    def requests():
        while (item := out.get()) is not None:
            yield item

    try:
        for msg in seats.Play(requests(), metadata=metadata):
            for event in msg.events:
                which = event.WhichOneof("event")
                decision = None
                if which == "decision":
                    decision = event.decision
                elif which == "snapshot" and event.snapshot.HasField("decision"):
                    decision = event.snapshot.decision
                elif which == "match_ended":
                    return
                if decision is not None:
                    time.sleep(0.2)  # past the deadline, every time
                    out.put(wire.answer(decision.decision_id, 0))
    except grpc.RpcError:
        pass
    finally:
        out.put(None)


for assignment in ladder.Enter(pb.EnterRequest(name=name), metadata=(("bot-key", key),)):
    if assignment.match_id:
        threading.Thread(target=play, args=(assignment.seat_token,), daemon=True).start()
"""


def admin(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MAMMAMIA), "admin", *args, "--server", address, "--organiser-key", ORGANISER_KEY],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def audit_log(address: str) -> list[dict[str, Any]]:
    done = admin(address, "log", "--json")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def enter(address: str, name: str, key: str) -> grpc.RpcError | None:
    """Returns how an Enter of ``name`` ends within two seconds (None: it stays open)."""
    with grpc.insecure_channel(address) as channel:
        stream = pb_grpc.LadderStub(channel).Enter(
            pb.EnterRequest(name=name), metadata=(("bot-key", key),), timeout=2
        )
        try:
            for _ in stream:
                pass
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                return None
            return e
    return None


def register(address: str, name: str) -> str:
    with grpc.insecure_channel(address) as channel:
        reply = pb_grpc.LadderStub(channel).Register(pb.RegisterRequest(name=name), timeout=10)
    return str(reply.key)


def bot_stats(address: str, name: str) -> pb.BotStatsResponse:
    with grpc.insecure_channel(address) as channel:
        return pb_grpc.LadderStub(channel).BotStats(pb.BotStatsRequest(name=name), timeout=10)


def ladder_matches(address: str, limit: int = 500) -> list[pb.MatchSummary]:
    with grpc.insecure_channel(address) as channel:
        reply = pb_grpc.LadderStub(channel).Matches(pb.MatchesRequest(limit=limit), timeout=10)
    return list(reply.matches)


def test_suspend_void_and_abort_on_a_ladder_of_six_bots(
    start_server: Callable[..., RunningServer], ladder_bots: Bots, tmp_path: Path
) -> None:
    server = start_server(ladder_concurrency=3, ladder_players="2-3", no_web=True)
    bots = ladder_bots(server.address, SIX)
    wait_until(finished_at_least(server.address, 8), 120, "8 rated ladder matches")

    # Suspend: the bot's entry ends (its process stops on PERMISSION_DENIED), a new
    # Enter is refused with the reason, and it is never seated again.
    done = admin(server.address, "suspend", "random-1", "--reason", "crashes the host")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("random-1 suspended") and "(as organiser)" in done.stdout
    suspended_at = time.time()
    assert bots["random-1"].wait(timeout=30) != 0
    refused = enter(server.address, "random-1", (tmp_path / "random-1.key").read_text().strip())
    assert refused is not None and refused.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "suspended: crashes the host" in str(refused.details())
    line = {s.name: s for s in standings(server.address).standings}["random-1"]
    assert line.suspended == "crashes the host"
    stats = bot_stats(server.address, "random-1")
    assert (stats.suspended, stats.suspended_by) == ("crashes the host", "organiser")
    assert {s.suspended for s in standings(server.address).standings if s.name != "random-1"} == {
        ""
    }
    before = standings(server.address).matches_finished
    wait_until(finished_at_least(server.address, before + 4), 120, "4 more matches")
    later = query(
        server.db_path,
        "SELECT COUNT(*) FROM ladder_results WHERE name = 'random-1' AND created > ?",
        suspended_at + 1,
    )
    assert later == [(0,)]

    # Void: the match stays listed, marked voided; the ratings leave it.
    finished = [m for m in ladder_matches(server.address) if not m.voided]
    voided = finished[len(finished) // 2]
    done = admin(server.address, "void", voided.match_id, "--reason", "a server fault")
    assert done.returncode == 0, done.stderr
    again = admin(server.address, "void", voided.match_id, "--reason", "twice", "--json")
    assert json.loads(again.stdout)["changed"] is False
    listed = {m.match_id: m for m in ladder_matches(server.address)}[voided.match_id]
    assert listed.voided and listed.void_reason == "a server fault"
    assert listed.voided_by == "organiser"

    # Abort: an organiser's match (waiting for its players) ends as aborted.
    created = subprocess.run(
        [str(MAMMAMIA), "match", "create", "--players", "2", "--server", server.address,
         "--organiser-key", ORGANISER_KEY],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    match_id = json.loads(created.stdout)["match"]
    done = admin(server.address, "abort", match_id, "--reason", "set up by mistake")
    assert done.returncode == 0, done.stderr
    wait_until(
        lambda: (
            query(server.db_path, "SELECT status FROM matches WHERE id = ?", match_id)
            == [("aborted",)]
        ),
        30,
        "the match aborted",
    )
    gone = admin(server.address, "abort", match_id, "--reason", "again")
    assert gone.returncode == 1 and "NOT_FOUND" in gone.stderr

    # Paused, the ladder's matches end and no new one forms: the standings hold still.
    done = admin(server.address, "pause", "--reason", "to compare the standings")
    assert done.returncode == 0, done.stderr
    wait_until(
        lambda: (
            query(server.db_path, "SELECT COUNT(*) FROM ladder_matches WHERE status = 'running'")
            == [(0,)]
        ),
        120,
        "the running matches to end",
    )
    # Reinstated, the bot may enter again.
    done = admin(server.address, "reinstate", "random-1", "--reason", "fixed")
    assert done.returncode == 0, done.stderr
    assert (
        enter(server.address, "random-1", (tmp_path / "random-1.key").read_text().strip()) is None
    )
    assert {s.suspended for s in standings(server.address).standings} == {""}

    live = standings(server.address)
    trail = audit_log(server.address)
    assert [(e["operator"], e["action"], e["target"], e["reason"]) for e in trail] == [
        ("organiser", "bot.suspend", "random-1", "crashes the host"),
        ("organiser", "match.void", voided.match_id, "a server fault"),
        ("organiser", "match.create", match_id, ""),
        ("organiser", "match.abort", match_id, "set up by mistake"),
        ("organiser", "ladder.pause", "ladder_paused", "to compare the standings"),
        ("organiser", "bot.reinstate", "random-1", "fixed"),
    ]
    assert server.stop() == 0

    # `ladder rerate` agrees with what the server stored, which the live standings
    # showed: the voided match left out of both.
    rerate = subprocess.run(
        [str(MAMMAMIA), "ladder", "rerate", "--db", str(server.db_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert rerate.returncode == 0, rerate.stdout + rerate.stderr
    store = LadderStore(server.db_path)
    try:
        results = store.rated_results()
        ids = [r[0] for r in query(server.db_path, "SELECT match_id FROM ladder_matches")]
        assert voided.match_id in ids
        assert len(results) == live.matches_finished
        recomputed = replay(results)
        for line in live.standings:
            assert abs(recomputed[player(line.name, line.version)].mu - line.mu) < 1e-9, line.name
            assert abs(recomputed[player(line.name, line.version)].sigma - line.sigma) < 1e-9, (
                line.name
            )
    finally:
        store.close()


def test_quotas_are_refused_with_their_status_and_lifted_per_bot(
    start_server: Callable[..., RunningServer], ladder_bots: Bots, tmp_path: Path
) -> None:
    server = start_server(
        ladder_players="2", ladder_quota_matches=1, ladder_quota_entries=2, no_web=True
    )
    key = register(server.address, "eager")
    assert enter(server.address, "eager", key) is None
    assert enter(server.address, "eager", key) is None
    third = enter(server.address, "eager", key)
    assert third is not None and third.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "quota of entries: 2 Enter calls an hour" in str(third.details())
    done = admin(server.address, "quota", "eager", "--entries", "0", "--reason", "a test bot")
    assert done.returncode == 0, done.stderr
    assert "entries no quota" in done.stdout and "matches 1 an hour (the server's default)" in (
        done.stdout
    )
    assert enter(server.address, "eager", key) is None

    # One match an hour each: two bots play one match, then wait.
    ladder_bots(server.address, {"greedy-q": "greedy", "random-q": "random"})
    wait_until(finished_at_least(server.address, 1), 60, "the first match")
    time.sleep(3)
    assert standings(server.address).matches_finished == 1
    # Each is told why it waits (the SDK logs the notice).
    for name in ("greedy-q", "random-q"):
        log = (tmp_path / "bots" / f"{name}.log").read_text()
        assert "quota of matches for the hour" in log, name
    for name in ("greedy-q", "random-q"):
        done = admin(server.address, "quota", name, "--matches", "3", "--reason", "more")
        assert done.returncode == 0, done.stderr
    wait_until(finished_at_least(server.address, 3), 90, "their next two matches")
    time.sleep(3)
    assert standings(server.address).matches_finished == 3
    trail = audit_log(server.address)
    assert [(e["action"], e["target"], e["details"]) for e in trail] == [
        ("bot.quota", "eager", {"entries": 0, "per_hour": None}),
        ("bot.quota", "greedy-q", {"entries": None, "per_hour": 3}),
        ("bot.quota", "random-q", {"entries": None, "per_hour": 3}),
    ]
    assert server.stop() == 0


def test_a_bot_too_slow_for_its_deadlines_is_quarantined(
    start_server: Callable[..., RunningServer], ladder_bots: Bots, tmp_path: Path
) -> None:
    script = tmp_path / "slow.py"
    script.write_text(SLOW_BOT)
    server = start_server(
        ladder_players="2",
        ladder_deadline_ms=100,
        ladder_quarantine=3,
        ladder_concurrency=2,
        no_web=True,
    )
    ladder_bots(server.address, {"greedy-s": "greedy", "random-s": "random"})
    with open(tmp_path / "slow.log", "wb") as out:
        slow = subprocess.Popen(
            [str(MAMMAMIA.parent / "python"), str(script), server.address, "slow"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )

    def quarantined() -> bool:
        lines = {s.name: s.suspended for s in standings(server.address).standings}
        return lines.get("slow") == "quarantine"

    try:
        wait_until(quarantined, 180, "the slow bot quarantined")
        assert slow.wait(timeout=30) != 0  # its entry ended: PERMISSION_DENIED
    finally:
        slow.kill()
        slow.wait()
    assert "PERMISSION_DENIED" in (tmp_path / "slow.log").read_text()
    stats = bot_stats(server.address, "slow")
    assert (stats.suspended, stats.suspended_by) == ("quarantine", "server")
    # The bots that answer in time are not.
    assert {s.suspended for s in standings(server.address).standings if s.name != "slow"} == {""}
    trail = audit_log(server.address)
    assert [(e["operator"], e["action"], e["target"], e["reason"]) for e in trail] == [
        ("server", "bot.suspend", "slow", "quarantine")
    ]
    assert trail[0]["details"]["matches"] == 3 and trail[0]["details"]["defaulted"] >= 2
    # Its last three finished matches: mostly played by the default policy.
    rows = query(
        server.db_path,
        "SELECT r.autopilot FROM ladder_results r JOIN ladder_matches m"
        " ON m.match_id = r.match_id WHERE r.name = 'slow' AND m.status = 'finished'"
        " ORDER BY m.finish_order DESC LIMIT 3",
    )
    assert sum(a for (a,) in rows) >= 2
    done = admin(server.address, "reinstate", "slow", "--reason", "now answers in time")
    assert done.returncode == 0, done.stderr
    assert "slow reinstated" in done.stdout
    assert quarantined() is False
    assert server.stop() == 0


@pytest.mark.parametrize("call", ["suspend", "void", "quota"])
def test_a_change_names_what_it_cannot_find(
    start_server: Callable[..., RunningServer], call: str
) -> None:
    server = start_server(no_web=True)
    target = "nobody" if call != "void" else "no-such-match"
    extra = ["--matches", "1"] if call == "quota" else []
    done = admin(server.address, call, target, *extra, "--reason", "why")
    assert done.returncode == 1 and "NOT_FOUND" in done.stderr and target in done.stderr
    blank = admin(server.address, call, target, *extra, "--reason", " ")
    assert blank.returncode == 1 and "INVALID_ARGUMENT" in blank.stderr
    assert audit_log(server.address) == []
