"""The arena: seat rotation, statistics, and the ``mammamia arena`` command."""

from __future__ import annotations

import json
import math
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from client_sdk import run_arena, wilson_interval
from client_sdk.arena import lineups
from mammamia import loads

MAMMAMIA = str(Path(sys.executable).with_name("mammamia"))


@pytest.mark.parametrize(("bots", "players"), [(3, 3), (2, 3), (1, 2), (4, 4), (2, 5)])
def test_every_bot_sits_in_every_seat_equally_often(bots: int, players: int) -> None:
    games = players * 12
    seats = Counter(
        (seat, bot) for lineup in lineups(bots, players, games) for seat, bot in enumerate(lineup)
    )
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
    assert (lambda a, b: a[1] - a[0] > b[1] - b[0])(
        wilson_interval(5, 10), wilson_interval(50, 100)
    )


def test_in_process_arena_counts_every_seat_and_shares_ties() -> None:
    result = run_arena(["random", "greedy", "random"], games=6, players=3, jobs=1, seed=2)
    names = {b.name for b in result.bots}
    assert names == {"random", "greedy", "random#2"}
    assert sum(b.games for b in result.bots) == 6 * 3
    assert math.isclose(sum(b.wins for b in result.bots), 6)


def arena(*args: str) -> dict[str, Any]:
    out = subprocess.run(
        [MAMMAMIA, "arena", *args], capture_output=True, text=True, timeout=120, check=True
    )
    assert "arena" in out.stderr  # the progress bar
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def test_the_arena_command_prints_json_and_repeats_for_a_seed() -> None:
    args = (
        "random",
        "greedy",
        "counter",
        "--games",
        "6",
        "--players",
        "3",
        "--jobs",
        "2",
        "--json",
    )
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
    out = subprocess.run(
        [MAMMAMIA, "arena", "random", "greedy", "--games", "2", "--jobs", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0
    header = out.stdout.splitlines()[1].split()
    assert header[:3] == ["bot", "games", "wins"]
    bad = subprocess.run(
        [MAMMAMIA, "arena", "random", "nobody", "--games", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "'nobody'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def children(pid: int) -> list[int]:
    """Returns the child processes of ``pid`` (Linux)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    """Returns whether ``pid`` runs (a zombie waiting for its parent does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_ctrl_c_stops_the_arena_at_once_with_the_games_so_far() -> None:
    proc = subprocess.Popen(
        [MAMMAMIA, "arena", "counter", "counter", "counter", "--games", "100000", "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        # Wait for the progress bar to move, then interrupt.
        seen = ""
        while "1/100000" not in seen:
            assert proc.poll() is None
            seen = seen[-100:] + proc.stderr.read(200)
        workers = children(proc.pid)
        assert len(workers) >= 2
        interrupted = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - interrupted
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert took < 5, f"took {took:.1f} s to stop"
    assert proc.returncode == 130
    assert "Traceback" not in err
    finished = re.search(r"interrupted: (\d+) of 100000 games finished", err)
    assert finished, err[-500:]
    lines = out.splitlines()
    assert lines[0] == f"{finished[1]} games, 3 players, seed 0 (interrupted, of 100000)"
    assert lines[1].split()[:3] == ["bot", "games", "wins"] and len(lines) == 5
    assert [w for w in workers if alive(w)] == []


def test_the_help_reads_right_and_names_the_options() -> None:
    out = subprocess.run(
        [MAMMAMIA, "arena", "--help"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "%%" not in out and "95% Wilson" in out
    for option in ("--deadline-ms MS", "--out DIR", "--out-lost NAME", "--pairs", "default 5000"):
        assert option in out


STUCK_BOT = """
import threading

from bots.greedy import GreedyBot


class Stuck(GreedyBot):
    name = "stuck"
    calls = 0

    def turn(self, view):
        Stuck.calls += 1
        if Stuck.calls == 1:
            threading.Event().wait()     # never answers its first decision
        return super().turn(view)
"""

RAISER_BOT = """
from bots.greedy import GreedyBot


class Raiser(GreedyBot):
    name = "raiser"

    def turn(self, view):
        if view.round > 1:
            raise RuntimeError("lost count of the oven")
        return super().turn(view)
"""


def test_late_decisions_are_counted_in_the_table_and_the_json(tmp_path: Path) -> None:
    (tmp_path / "stuck.py").write_text(STUCK_BOT)
    spec = str(tmp_path / "stuck.py") + ":Stuck"
    stats = {
        b["name"]: b
        for b in arena(
            spec, "random", "--games", "4", "--jobs", "2", "--deadline-ms", "300", "--json"
        )["bots"]
    }
    # The first call of each worker's Stuck never returns: from then on every decision
    # of that game is late, answered for it without calling it.
    assert stats["stuck"]["late"] > 4 and stats["stuck"]["replaced"] == stats["stuck"]["late"]
    assert stats["random"]["replaced"] == stats["random"]["late"] < stats["stuck"]["late"]
    out = subprocess.run(
        [
            MAMMAMIA,
            "arena",
            spec,
            "random",
            "--games",
            "2",
            "--jobs",
            "1",
            "--deadline-ms",
            "300",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    header, *rows = out.splitlines()[1:]
    assert header.split()[-2:] == ["late", "replaced"]
    row = next(r.split() for r in rows if r.startswith("stuck"))
    assert int(row[-2]) == int(row[-1]) > 0


def test_a_fault_is_shown_once_with_its_line_then_counted(tmp_path: Path) -> None:
    (tmp_path / "raiser.py").write_text(RAISER_BOT)
    spec = str(tmp_path / "raiser.py") + ":Raiser"
    out = subprocess.run(
        [MAMMAMIA, "arena", spec, "random", "--games", "6", "--jobs", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    stats = {b["name"]: b for b in json.loads(out.stdout)["bots"]}
    assert stats["raiser"]["replaced"] > 6 and stats["raiser"]["late"] == 0
    line = (
        RAISER_BOT.splitlines().index('            raise RuntimeError("lost count of the oven")')
        + 1
    )
    assert out.stderr.count("raised RuntimeError: lost count of the oven") == 1
    assert f"{tmp_path / 'raiser.py'}:{line}" in out.stderr
    assert out.stderr.count("Traceback (most recent call last)") == 1


def test_out_writes_every_record_and_out_lost_only_the_lost_ones(tmp_path: Path) -> None:
    every, lost = tmp_path / "every", tmp_path / "lost"
    first = arena("random", "greedy", "--games", "10", "--jobs", "2", "--json", "--out", str(every))
    files = sorted(every.iterdir())
    assert len(files) == 10 and files[0].name.startswith("game-01-")
    show = subprocess.run(
        [MAMMAMIA, "show", str(files[0])], capture_output=True, text=True, timeout=60, check=True
    )
    assert "Winner" in show.stdout
    again = arena(
        "random",
        "greedy",
        "--games",
        "10",
        "--jobs",
        "2",
        "--json",
        "--out",
        str(lost),
        "--out-lost",
        "random",
    )
    assert again["bots"] == first["bots"]
    kept = sorted(p.name for p in lost.iterdir())
    random_bot = next(b for b in first["bots"] if b["name"] == "random")
    assert 0 < len(kept) <= 10 - random_bot["wins"] + 0.5
    for name in kept:
        record = loads((lost / name).read_text())
        names = record.meta["names"]
        assert all(names[w] != "random" for w in record.replay().winners())
    # Every game random did not win is kept, and only those.
    assert kept == sorted(
        p.name
        for p in files
        if all(
            loads(p.read_text()).meta["names"][w] != "random"
            for w in loads(p.read_text()).replay().winners()
        )
    )
    bad = subprocess.run(
        [MAMMAMIA, "arena", "random", "greedy", "--games", "2", "--out-lost", "greedy"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "--out" in bad.stderr
    bad = subprocess.run(
        [
            MAMMAMIA,
            "arena",
            "random",
            "greedy",
            "--games",
            "2",
            "--out",
            str(tmp_path / "x"),
            "--out-lost",
            "nobody",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "'nobody'" in bad.stderr


def test_pairs_prints_each_bots_rate_against_each_other() -> None:
    two = arena("random", "greedy", "--games", "20", "--players", "2", "--jobs", "2", "--json")
    rates = {b["name"]: b["win_rate"] for b in two["bots"]}
    pairs = two["pairs"]
    assert math.isclose(pairs["greedy"]["random"], rates["greedy"])
    assert math.isclose(pairs["greedy"]["random"] + pairs["random"]["greedy"], 1)
    out = subprocess.run(
        [
            MAMMAMIA,
            "arena",
            "random",
            "greedy",
            "counter",
            "--games",
            "6",
            "--jobs",
            "2",
            "--pairs",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    lines = out.splitlines()
    at = lines.index("head to head: the row's rate against the column")
    header = lines[at + 1].split()
    assert header[0] == "vs" and sorted(header[1:]) == ["counter", "greedy", "random"]
    for row in lines[at + 2 : at + 5]:
        cells = row.split()
        assert cells[1 + header[1:].index(cells[0])] == "-"
        assert all(0 <= float(c) <= 1 for c in cells[1:] if c != "-")
