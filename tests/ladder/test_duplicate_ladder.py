"""End to end: a ladder started with --ladder-duplicate plays every deal as a set of
rotated matches with one commitment; complete sets verify; a set cut short (a bot
leaves, the server is killed) keeps its finished matches and reveals its seed; a
bot's results by seat position add up to its totals. On PostgreSQL, one host with the
flag plays sets as a ladder of its own."""

from __future__ import annotations

import json
import signal
import subprocess
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.db.connection import connect
from tests.ports import restartable_port

from .conftest import MAMMAMIA, query, wait_until

THREE = {"random-d": "random", "greedy-d": "greedy", "counter-d": "counter"}


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Returns the finished ``mammamia`` command."""
    return subprocess.run(
        [str(MAMMAMIA), *args], capture_output=True, text=True, timeout=60, check=check
    )


def sets_with(db: Path, status: str) -> list[str]:
    """Returns the ids of the sets of ``status`` in the server's database."""
    return [
        r[0]
        for r in query(
            db, "SELECT set_id FROM ladder_sets WHERE status = ? ORDER BY created", status
        )
    ]


def listed(address: str, *name: str) -> dict[str, dict[str, Any]]:
    """Returns the finished matches ``ladder matches --json`` lists (of every bot, or
    of the bot ``name``), by id."""
    out = cli(
        "ladder",
        "matches",
        "--server",
        address,
        "--json",
        "--limit",
        "500",
        *(("--name", *name) if name else ()),
    )
    return {m["match"]: m for m in map(json.loads, out.stdout.splitlines())}


def assignments(logs: Path) -> dict[str, dict[str, Any]]:
    """Returns the assignments the bots logged (the SDK's ``ladder_assignment``), by
    match id."""
    seen = {}
    for log in logs.glob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if '"ladder_assignment"' in line:
                event = json.loads(line)
                seen[event["match"]] = event
    return seen


def test_a_duplicate_ladder_plays_complete_rotated_sets_that_verify(
    start_server: Callable[..., Any], ladder_bots: Callable[..., None], tmp_path: Path
) -> None:
    server = start_server(ladder_duplicate=True, ladder_concurrency=1, ladder_players="2-3")
    ladder_bots(server.address, THREE)
    db = server.db_path
    wait_until(lambda: len(sets_with(db, "complete")) >= 4, 120, "4 complete sets")

    complete = set(sets_with(db, "complete"))
    by_set: dict[str, list[dict[str, Any]]] = defaultdict(list)
    greedy = listed(server.address, "greedy-d")
    every = listed(server.address)  # (listed later: more may have finished)
    assert set(greedy) <= set(every) and all("greedy-d" in m["names"] for m in greedy.values())
    for m in every.values():
        assert m["set"] is not None, m  # every match belongs to a set
        by_set[m["set"]["id"]].append(m)
    assert complete <= set(by_set)
    for checked, set_id in enumerate(sorted(complete)):
        matches = sorted(by_set[set_id], key=lambda m: m["set"]["index"])
        n = matches[0]["players"]
        # One match per rotation, all with the set's commitment.
        assert [m["set"]["index"] for m in matches] == list(range(n))
        assert [m["set"]["rotation"] for m in matches] == list(range(n))
        assert {m["set"]["size"] for m in matches} == {n}
        assert len({m["commitment"] for m in matches}) == 1
        first = matches[0]["names"]
        told = assignments(tmp_path / "bots")
        for m in matches:
            k = m["set"]["rotation"]
            assert [m["names"][(s + k) % n] for s in range(n)] == first
            # The bots were told the set's commitment with their seats, before joining.
            assert told[m["match"]]["commitment"] == m["commitment"]
            assert (told[m["match"]]["set"], told[m["match"]]["set_index"]) == (set_id, k)
        if checked >= 2:
            continue
        # Every record verifies and deals the set's one game.
        deals = set()
        for m in matches:
            path = tmp_path / f"{m['match']}.json"
            path.write_text(cli("ladder", "record", "--server", server.address, m["match"]).stdout)
            out = cli("verify", str(path), check=False)
            assert out.returncode == 0, out.stderr
            record = json.loads(path.read_text())
            assert record["meta"]["fairness"]["commitment"] == m["commitment"]
            deals.add(json.dumps([record["seed"], record["deal"], record["first_player"]]))
        assert len(deals) == 1

    # A bot's results by seat position add up to its totals, per player count.
    for name in THREE:
        stats = json.loads(
            cli("ladder", "bot", "--server", server.address, "--name", name, "--json").stdout
        )
        tallies = {t["players"]: t for t in stats["tallies"]}
        assert tallies[0]["games"] == sum(t["games"] for p, t in tallies.items() if p)
        for players, tally in tallies.items():
            if not players:
                continue
            seats = [p for p in stats["positions"] if p["players"] == players]
            assert {p["position"] for p in seats} <= set(range(1, players + 1))
            assert sum(p["games"] for p in seats) == tally["games"]
            assert sum(p["wins"] for p in seats) == tally["wins"]
            assert all(1 <= p["mean_rank"] <= players for p in seats)
    table = cli("ladder", "bot", "--server", server.address, "--name", "counter-d").stdout
    assert "by seat position" in table and "mean rank" in table
    unknown = cli("ladder", "bot", "--server", server.address, "--name", "nobody", check=False)
    assert unknown.returncode == 1 and "NOT_FOUND" in unknown.stderr

    assert server.stop() == 0
    # Stopping cut the set under way short; no record stays sealed.
    assert set(sets_with(db, "playing")) == set()
    assert query(db, "SELECT COUNT(*) FROM matches WHERE record LIKE '%\"sealed\"%'") == [(0,)]
    rerate = cli("ladder", "rerate", "--db", str(db), check=False)
    assert rerate.returncode == 0, rerate.stdout
    assert "seat positions: agree" in rerate.stdout
    # No set's seed ever went to the log (only its commitment).
    logs = server.logs()
    for seed, committed in query(db, "SELECT server_seed, commitment FROM ladder_sets"):
        assert seed not in logs and committed in logs


SLOW_BOT = """
import time

from client_sdk import Bot


class Slow(Bot):
    name = "slow"

    def turn(self, view):
        time.sleep(0.1)  # a long match, so that the set can be cut in its middle
        return view.legal[0]
"""


def first_of_a_set(db: Path, but: str = "") -> tuple[str, str] | None:
    """Returns (set, match) of the first match of a set running now (not of set
    ``but``), or None."""
    rows = query(
        db,
        "SELECT m.set_id, m.match_id FROM ladder_matches m"
        " JOIN ladder_sets s ON s.set_id = m.set_id WHERE m.status = 'running'"
        " AND s.status = 'playing' AND m.set_index = 0 AND m.set_id != ?",
        but,
    )
    return rows[0] if rows else None


def second_of_a_set(db: Path) -> tuple[str, str] | None:
    """Returns (set, its first match) while the set's second match runs, or None."""
    rows = query(
        db,
        "SELECT m.set_id, f.match_id FROM ladder_matches m"
        " JOIN ladder_matches f ON f.set_id = m.set_id AND f.set_index = 0"
        " WHERE m.status = 'running' AND m.set_index = 1",
    )
    return rows[0] if rows else None


def web_replay(server: Any, match_id: str) -> int:
    """Returns the status of the server's web page's replay of ``match_id``."""
    url = next(
        json.loads(line)["url"] for line in server.logs().splitlines() if '"web_serving"' in line
    )
    try:
        with urllib.request.urlopen(f"{url}api/replay/{match_id}", timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_a_set_cut_short_keeps_its_finished_matches_and_reveals_its_seed(
    start_server: Callable[..., Any], ladder_bots: Callable[..., dict], tmp_path: Path
) -> None:
    slow = tmp_path / "slow_bot.py"
    slow.write_text(SLOW_BOT)
    server = start_server(
        port=restartable_port(), ladder_duplicate=True, ladder_concurrency=1, ladder_players="2"
    )
    bots = ladder_bots(server.address, {"slow-d": f"{slow}:Slow", "greedy-d": "greedy"})
    db = server.db_path

    # While a set's second match runs, its first match's record is sealed.
    sealed_set, sealed = wait_until(lambda: second_of_a_set(db), 60, "a set's second match")
    with grpc.insecure_channel(server.address) as channel:
        text = (
            pb_grpc.LadderStub(channel)
            .GetRecord(pb.GetRecordRequest(match_id=sealed), timeout=10)
            .json
        )
    assert web_replay(server, sealed) == 409
    path = tmp_path / "sealed.json"
    path.write_text(text)
    record = json.loads(text)
    assert "seed" not in record and "deal" not in record
    assert "server_seed" not in record["meta"]["fairness"]
    out = cli("verify", str(path), check=False)
    assert out.returncode == 2 and "cannot verify yet" in out.stderr

    # A crash in the middle of a set: the match under way is resumed from the journal
    # and played to its end; the set's remaining matches are never played.
    set_id, _ = wait_until(lambda: first_of_a_set(db, but=sealed_set), 60, "a set's first match")
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(timeout=30)
    server.start()
    wait_until(lambda: set_id in sets_with(db, "cut"), 60, "the cut-off set to end")
    (reason,) = query(db, "SELECT reason FROM ladder_sets WHERE set_id = ?", set_id)[0]
    assert reason == "the server restarted"
    played = query(
        db,
        "SELECT match_id, status, rated FROM ladder_matches WHERE set_id = ? ORDER BY set_index",
        set_id,
    )
    assert 1 <= len(played) <= 2
    ((committed,),) = query(db, "SELECT commitment FROM ladder_sets WHERE set_id = ?", set_id)
    for m, status, rated in played:
        if status == "finished":  # finished matches count
            assert rated == 1
        path = tmp_path / f"{m}.json"
        path.write_text(cli("ladder", "record", "--server", server.address, m).stdout)
        assert cli("verify", str(path), check=False).returncode == 0
        # The match resumed after the crash is still one of the set's.
        fair = json.loads(path.read_text())["meta"]["fairness"]
        assert fair["commitment"] == committed and fair["set"]["id"] == set_id

    # A bot that leaves in the middle of a set: its match is played to its end by the
    # server's default policy and counts; the set is cut short there.
    later, first = wait_until(
        lambda: first_of_a_set(db, but=set_id), 60, "a set's first match after the restart"
    )
    bots["slow-d"].send_signal(signal.SIGKILL)
    bots["slow-d"].wait(timeout=30)
    wait_until(lambda: later in sets_with(db, "cut"), 120, "the set to be cut short")
    (reason,) = query(db, "SELECT reason FROM ladder_sets WHERE set_id = ?", later)[0]
    assert reason == "slow-d left the ladder"
    rows = query(
        db,
        "SELECT match_id, status, rated FROM ladder_matches WHERE set_id = ? ORDER BY set_index",
        later,
    )
    assert rows == [(first, "finished", 1)]
    for m, *_ in rows:
        path = tmp_path / f"{m}.json"
        path.write_text(cli("ladder", "record", "--server", server.address, m).stdout)
        assert cli("verify", str(path), check=False).returncode == 0
    assert server.stop() == 0
    assert query(db, "SELECT COUNT(*) FROM matches WHERE record LIKE '%\"sealed\"%'") == [(0,)]
    assert cli("ladder", "rerate", "--db", str(db), check=False).returncode == 0


def test_a_drain_cuts_a_set_after_its_grace_and_reveals_the_aborted_match(
    start_server: Callable[..., Any], ladder_bots: Callable[..., dict], tmp_path: Path
) -> None:
    slow = tmp_path / "slow_bot.py"
    slow.write_text(SLOW_BOT.replace("time.sleep(0.1)", "time.sleep(0.5)"))
    server = start_server(
        ladder_duplicate=True, ladder_concurrency=1, ladder_players="2", drain_seconds=1
    )
    ladder_bots(server.address, {"slow-e": f"{slow}:Slow", "greedy-e": "greedy"})
    db = server.db_path
    set_id, match_id = wait_until(lambda: first_of_a_set(db), 60, "a set's first match")
    # The drain gives the match its grace, aborts it, and only then ends the set: it
    # does not wait for the set's match to be played out.
    assert server.stop(timeout=30) == 0
    assert query(db, "SELECT status, reason FROM ladder_sets WHERE set_id = ?", set_id) == [
        ("cut", "the server stopped")
    ]
    assert query(db, "SELECT status, rated FROM ladder_matches WHERE match_id = ?", match_id) == [
        ("aborted", 0)
    ]
    (text,) = query(db, "SELECT record FROM matches WHERE id = ?", match_id)[0]
    path = tmp_path / "aborted.json"
    path.write_text(text)
    out = cli("verify", str(path), check=False)
    assert out.returncode == 0, out.stderr


def test_one_host_on_postgresql_plays_duplicate_sets_as_a_ladder_of_its_own(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., None],
    postgres_url: str,
    tmp_path: Path,
) -> None:
    # On PostgreSQL the flag keeps the ladder one host's (LadderStore.claim), scheduled
    # as on a file: rotated sets with one commitment, told with the seats, that verify.
    def rows(sql: str, *params: Any) -> list[tuple[Any, ...]]:
        db = connect(postgres_url)
        try:
            return [tuple(r) for r in db.execute(sql, params).fetchall()]
        finally:
            db.close()

    def complete() -> list[str]:
        return [
            s
            for (s,) in rows(
                "SELECT set_id FROM ladder_sets WHERE status = 'complete' ORDER BY created"
            )
        ]

    server = start_server(
        db=postgres_url,
        ladder_duplicate=True,
        ladder_concurrency=1,
        ladder_players="2",
        args=["--host-id", "host-d"],
    )
    ladder_bots(server.address, {"random-p": "random", "greedy-p": "greedy"})
    wait_until(lambda: len(complete()) >= 2, 120, "2 complete sets on PostgreSQL")
    every = listed(server.address)
    told = assignments(tmp_path / "bots")
    for set_id in complete()[:2]:
        matches = sorted(
            (m for m in every.values() if m["set"] and m["set"]["id"] == set_id),
            key=lambda m: m["set"]["index"],
        )
        assert [m["set"]["index"] for m in matches] == [0, 1]
        assert len({m["commitment"] for m in matches}) == 1
        assert matches[1]["names"] == matches[0]["names"][::-1]
        for m in matches:
            assert told[m["match"]]["commitment"] == m["commitment"]
            assert told[m["match"]]["set"] == set_id
            path = tmp_path / f"{m['match']}.json"
            path.write_text(cli("ladder", "record", "--server", server.address, m["match"]).stdout)
            out = cli("verify", str(path), check=False)
            assert out.returncode == 0, out.stderr
    # Scheduled by this host alone: no entry rows, no tokens kept in the database.
    assert rows("SELECT COUNT(*) FROM ladder_entries") == [(0,)]
    assert rows("SELECT COUNT(*) FROM ladder_results WHERE token IS NOT NULL") == [(0,)]
    assert server.stop() == 0
    assert rows("SELECT COUNT(*) FROM ladder_sets WHERE status = 'playing'") == [(0,)]
