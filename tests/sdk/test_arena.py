"""The arena: seat rotation, statistics, and the ``mammamia arena`` command."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from client_sdk import run_arena, wilson_interval
from client_sdk.arena import lineups

MAMMAMIA = str(Path(sys.executable).with_name("mammamia"))


@pytest.mark.parametrize(("bots", "players"), [(3, 3), (2, 3), (1, 2), (4, 4), (2, 5)])
def test_every_bot_sits_in_every_seat_equally_often(bots: int, players: int) -> None:
    games = players * 12
    seats = Counter((seat, bot) for lineup in lineups(bots, players, games)
                    for seat, bot in enumerate(lineup))
    for seat in range(players):
        per_bot = [seats[seat, b] for b in range(bots)]
        total = sum(per_bot)
        # Each bot fills its share of the seats (cycled specs fill several).
        share = [sum(1 for i in range(players) if i % bots == b) for b in range(bots)]
        assert per_bot == [total * s // players for s in share]


def test_with_more_bots_than_seats_each_game_samples_distinct_bots() -> None:
    drawn = list(lineups(5, 3, 30, seed=1))
    assert all(len(set(lineup)) == 3 for lineup in drawn)
    assert set().union(*drawn) == set(range(5))
    assert drawn == list(lineups(5, 3, 30, seed=1))


def test_wilson_interval_holds_the_rate_and_is_symmetric() -> None:
    for wins, n in [(0, 10), (3, 10), (150, 300), (299.5, 300)]:
        lo, hi = wilson_interval(wins, n)
        assert 0 <= lo <= wins / n <= hi <= 1
        lo2, hi2 = wilson_interval(n - wins, n)
        assert math.isclose(lo, 1 - hi2) and math.isclose(hi, 1 - lo2)
    # More games, tighter interval.
    assert (lambda a, b: a[1] - a[0] > b[1] - b[0])(wilson_interval(5, 10),
                                                    wilson_interval(50, 100))


def test_in_process_arena_counts_every_seat_and_shares_ties() -> None:
    result = run_arena(["random", "greedy", "random"], games=6, players=3, jobs=1, seed=2)
    names = {b.name for b in result.bots}
    assert names == {"random", "greedy", "random#2"}
    assert sum(b.games for b in result.bots) == 6 * 3
    assert math.isclose(sum(b.wins for b in result.bots), 6)


def arena(*args: str) -> dict:
    out = subprocess.run([MAMMAMIA, "arena", *args], capture_output=True, text=True,
                         timeout=120, check=True)
    assert "arena" in out.stderr          # the progress bar
    return json.loads(out.stdout)


def test_the_arena_command_prints_json_and_repeats_for_a_seed() -> None:
    args = ("random", "greedy", "counter", "--games", "6", "--players", "3", "--jobs", "2",
            "--json")
    first = arena(*args, "--seed", "7")
    again = arena(*args, "--seed", "7")
    assert first == again
    assert {b["name"] for b in first["bots"]} == {"random", "greedy", "counter"}
    for b in first["bots"]:
        assert set(b) >= {"name", "games", "wins", "win_rate", "ci95", "mean_delivered"}
        assert b["games"] == 6
        lo, hi = b["ci95"]
        assert lo <= b["win_rate"] <= hi
    assert math.isclose(sum(b["wins"] for b in first["bots"]), 6)


def test_the_arena_command_prints_a_table_and_refuses_bad_specs() -> None:
    out = subprocess.run([MAMMAMIA, "arena", "random", "greedy", "--games", "2", "--jobs", "1"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    header = out.stdout.splitlines()[1].split()
    assert header[:3] == ["bot", "games", "wins"]
    bad = subprocess.run([MAMMAMIA, "arena", "random", "nobody", "--games", "2"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "'nobody'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_ctrl_c_stops_the_arena_cleanly() -> None:
    proc = subprocess.Popen([MAMMAMIA, "arena", "counter", "counter", "counter", "--games",
                             "100000", "--jobs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        # Wait for the progress bar to move, then interrupt.
        while "1/100000" not in proc.stderr.read(200):
            assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert "Traceback" not in err and out == ""
