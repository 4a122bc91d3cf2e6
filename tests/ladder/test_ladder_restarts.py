"""A ladder survives a graceful restart and a ``kill -9``: nothing announced is lost,
nothing is stored or rated twice, the matches a crash cut off resume and are rated,
and the ladder goes on."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from tests.ports import restartable_port

from .conftest import MAMMAMIA, finished_at_least, query, standings, wait_until

if TYPE_CHECKING:
    from tests.conftest import RunningServer

# The ladder_bots fixture: starts bots (name: kind) against an address, returns their processes.
StartBots = Callable[..., dict[str, subprocess.Popen[bytes]]]

BOTS = {"random-r": "random", "greedy-r": "greedy", "counter-r": "counter", "greedy-s": "greedy"}


def announced(address: str) -> set[str]:
    """Returns the ids of every finished match the server lists for the bots."""
    with grpc.insecure_channel(address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        return {
            m.match_id
            for name in BOTS
            for m in ladder.Matches(pb.MatchesRequest(name=name, limit=500), timeout=10).matches
        }


def test_restart_and_kill_lose_no_result_and_the_ladder_goes_on(
    start_server: Callable[..., RunningServer], ladder_bots: StartBots, tmp_path: Path
) -> None:
    # A fixed port, so the bots find the server again after each restart.
    server = start_server(
        port=restartable_port(), ladder_concurrency=2, ladder_players="2-4", drain_seconds=5
    )
    ladder_bots(server.address, BOTS)
    wait_until(finished_at_least(server.address, 5), 60, "5 rated matches")

    # A graceful restart in the middle: running matches end (or abort) before it stops.
    server.restart()
    before_restart = announced(server.address)
    assert len(before_restart) >= 5
    wait_until(
        finished_at_least(server.address, len(before_restart) + 5),
        60,
        "5 more rated matches after a restart",
    )

    # A crash in the middle: whatever was announced before it stays announced. In
    # flight: a ladder match whose game is still going (one whose end the server had
    # stored already is recovered from that, not resumed).
    def in_flight() -> list[tuple[str]]:
        return query(
            server.db_path,
            "SELECT l.match_id FROM ladder_matches l"
            " JOIN matches m ON m.id = l.match_id WHERE l.status = 'running'"
            " AND m.status IN ('waiting', 'running')",
        )

    seen = announced(server.address)
    for _attempt in range(5):
        wait_until(in_flight, 30, "a ladder match in flight")
        server.kill()
        cut = {m for (m,) in in_flight()}  # what the crash cut off
        server.start()
        if cut:
            break
    assert cut, "no kill -9 caught a ladder match in flight"
    after_crash = announced(server.address)
    assert seen <= after_crash
    assert before_restart <= after_crash
    wait_until(
        finished_at_least(server.address, len(after_crash) + 5),
        60,
        "5 more rated matches after a kill -9",
    )
    # The matches the crash cut off were resumed from the server's journal: they end
    # and are rated as if no crash had happened.
    wait_until(
        lambda: (
            cut
            <= {
                m
                for (m,) in query(
                    server.db_path, "SELECT match_id FROM ladder_matches WHERE status = 'finished'"
                )
            }
        ),
        60,
        "the matches the crash cut off to finish",
    )
    assert "ladder_match_resumed" in server.logs()
    assert server.stop() == 0

    # Every finished ladder match of the server has exactly one result, rated once;
    # the matches the crash cut off are aborted and unrated.
    db = server.db_path
    server_finished = {
        r[0] for r in query(db, "SELECT id FROM matches WHERE ladder = 1 AND status = 'finished'")
    }
    ladder_finished = {
        r[0] for r in query(db, "SELECT match_id FROM ladder_matches WHERE status = 'finished'")
    }
    assert server_finished == ladder_finished
    assert query(db, "SELECT COUNT(*) FROM ladder_matches WHERE status = 'running'") == [(0,)]
    assert query(
        db, "SELECT COUNT(*) FROM ladder_matches WHERE status = 'finished' AND rated = 0"
    ) == [(0,)]
    assert query(
        db, "SELECT COUNT(*) FROM ladder_matches WHERE status = 'aborted' AND rated = 1"
    ) == [(0,)]
    # The matches the crash cut off finished, resumed (or had their end stored).
    assert cut and cut <= ladder_finished
    mismatched = query(
        db,
        """
        SELECT COUNT(*) FROM ladder_results r JOIN matches m ON m.id = r.match_id
        WHERE m.status = 'finished' AND r.rank IS NOT json_extract(m.ranks, '$[' || r.seat || ']')
    """,
    )
    assert mismatched == [(0,)]
    seats = query(db, "SELECT SUM(players) FROM ladder_matches WHERE status = 'finished'")[0][0]
    results = query(
        db,
        "SELECT COUNT(*) FROM ladder_results r JOIN ladder_matches m"
        " USING (match_id) WHERE m.status = 'finished'",
    )[0][0]
    assert seats == results
    orders = query(
        db,
        "SELECT finish_order FROM ladder_matches WHERE status = 'finished' ORDER BY finish_order",
    )
    assert [o for (o,) in orders] == list(range(1, len(orders) + 1))

    rerate = subprocess.run(
        [str(MAMMAMIA), "ladder", "rerate", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rerate.returncode == 0, rerate.stdout + rerate.stderr


def test_a_crash_between_stored_record_and_ladder_result_is_recovered(
    start_server: Callable[..., RunningServer], ladder_bots: StartBots
) -> None:
    """A ladder match whose record the server stored, but whose ladder result the crash
    cut off, is taken from the stored record at the next start and rated then."""
    server = start_server(port=restartable_port(), ladder_concurrency=1, ladder_players="2")
    ladder_bots(server.address, {"greedy-x": "greedy", "random-x": "random"})
    wait_until(finished_at_least(server.address, 2), 60, "2 rated matches")
    assert server.stop() == 0
    db = server.db_path
    # Undo the ladder's bookkeeping of the newest match, as a crash right after the
    # server stored its record would have left it.
    (match_id,) = query(
        db,
        "SELECT match_id FROM ladder_matches WHERE status = 'finished'"
        " ORDER BY finish_order DESC LIMIT 1",
    )[0]
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE ladder_matches SET status = 'running', finish_order = NULL,"
            " rated = 0, ended = NULL WHERE match_id = ?",
            (match_id,),
        )
        conn.execute(
            "UPDATE ladder_results SET rank = NULL, delivered = NULL WHERE match_id = ?",
            (match_id,),
        )
        # Nothing rated yet: no ratings, no tallies (they commit together).
        conn.execute("DELETE FROM ladder_ratings")
        conn.execute("DELETE FROM ladder_tallies")
        conn.execute("DELETE FROM ladder_totals")
        conn.execute("DELETE FROM ladder_positions")
        conn.execute("UPDATE ladder_matches SET rated = 0")
    server.start()
    assert query(db, "SELECT status, rated FROM ladder_matches WHERE match_id = ?", match_id) == [
        ("finished", 1)
    ]
    finished = standings(server.address).matches_finished
    assert (
        finished == query(db, "SELECT COUNT(*) FROM ladder_matches WHERE status = 'finished'")[0][0]
    )
    assert server.stop() == 0
    rerate = subprocess.run(
        [str(MAMMAMIA), "ladder", "rerate", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rerate.returncode == 0, rerate.stdout + rerate.stderr


SLOW_BOT = """
import time

from client_sdk import Bot


class Slow(Bot):
    name = "slow"

    def turn(self, view):
        time.sleep(0.2)  # a long match, so that it can be cut in the middle
        return view.legal[0]
"""


def test_a_bot_that_vanishes_mid_match_is_played_to_the_end_and_rated(
    start_server: Callable[..., RunningServer], ladder_bots: StartBots, tmp_path: Path
) -> None:
    (tmp_path / "slow_bot.py").write_text(SLOW_BOT)
    server = start_server(ladder_concurrency=1, ladder_players="2", ladder_deadline_ms=500)
    bots = ladder_bots(
        server.address, {"stays": "greedy", "vanishes": f"{tmp_path / 'slow_bot.py'}:Slow"}
    )
    db = server.db_path

    def in_flight() -> list[tuple[str]]:
        return query(db, "SELECT match_id FROM ladder_matches WHERE status = 'running'")

    ((match_id,),) = wait_until(in_flight, 60, "a ladder match in flight")
    bots["vanishes"].kill()
    bots["vanishes"].wait(timeout=10)
    wait_until(
        lambda: query(
            db,
            "SELECT rated FROM ladder_matches WHERE match_id = ? AND status = 'finished'",
            match_id,
        ),
        90,
        "the match to be played to its end without the vanished bot",
    )
    assert {s.name for s in standings(server.address).standings} == {"stays", "vanishes"}
    with grpc.insecure_channel(server.address) as channel:
        record = pb_grpc.LadderStub(channel).GetRecord(
            pb.GetRecordRequest(match_id=match_id), timeout=10
        )
    meta = json.loads(record.json)["meta"]
    (seat,) = [s for s, n in enumerate(meta["names"]) if n == "vanishes"]
    assert any(t["seat"] == seat for t in meta["timeouts"])
    # Alone on the ladder, the remaining bot waits: no new match starts.
    assert in_flight() == []
