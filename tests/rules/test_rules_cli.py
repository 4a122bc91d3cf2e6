"""The ``mammamia state``, ``show`` and ``play`` commands, run as real subprocesses.

Bad input of every kind exits with status 2, prints one line on stderr naming the
fault (and the rule, for an illegal action) and nothing on stdout: never a traceback.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rules_support import Json, dump, early, play, replay, stacked, then

from mammamia import INGREDIENTS, MammaMiaError, RecordError, parse

GOOD = then(early("red-mushroom", "yellow-pepper"), play(0, "2 pineapple", draw="supply"))


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mammamia", *args], capture_output=True, text=True, timeout=timeout
    )


def spoiled(change: Callable[[Json], None]) -> str:
    record = json.loads(json.dumps(GOOD))
    change(record)
    return json.dumps(record)


def _unknown_card(r: Json) -> None:
    r["deal"]["supply"][2] = "cheese"


def _wrong_seat(r: Json) -> None:
    r["actions"][1]["seat"] = 0


def _illegal(r: Json) -> None:
    r["actions"][2]["play"]["count"] = 9


BAD_INPUT: list[tuple[str, str | None, str]] = [
    ("malformed-json", '{"format": "mammamia-record/1", "players": 2,', "not valid JSON"),
    ("not-an-object", "[1, 2, 3]", "must be a JSON object"),
    ("unknown-card-id", spoiled(_unknown_card), "unknown card id 'cheese'"),
    ("wrong-seat", spoiled(_wrong_seat), "action 1 (seat 0): seat 1 is to act"),
    ("illegal-action", spoiled(_illegal), "action 2 (seat 0): cannot play 9 olive"),
    ("six-players", spoiled(lambda r: r.update(players=6)), "R-SETUP-1"),
    ("missing-file", None, "cannot read"),
]
RULES = {"wrong-seat": "R-TURN-1", "illegal-action": "R-TURN-1"}


@pytest.mark.parametrize("command", ["state", "show"])
@pytest.mark.parametrize(("name", "text", "message"), BAD_INPUT, ids=[b[0] for b in BAD_INPUT])
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, command: str, name: str, text: str | None, message: str
) -> None:
    path = tmp_path / f"{name}.json"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    done = run(command, str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.endswith("\n") and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"mammamia {command}: {path}: ")
    assert message in done.stderr
    if name in RULES:
        assert f"({RULES[name]})" in done.stderr


def test_state_prints_the_dump(tmp_path: Path) -> None:
    path = tmp_path / "good.json"
    path.write_text(json.dumps(GOOD), encoding="utf-8")
    done = run("state", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    assert json.loads(done.stdout) == dump(replay(GOOD))


def test_play_writes_a_record_that_state_and_show_replay(tmp_path: Path) -> None:
    out = tmp_path / "game.json"
    played = run("play", "--players", "3", "--seed", "4", "--out", str(out))
    assert played.returncode == 0, played.stderr
    state = run("state", str(out))
    assert json.loads(state.stdout)["phase"] == "over"
    shown = run("show", str(out))
    assert shown.returncode == 0 and shown.stdout == played.stdout


def test_show_tells_the_game(tmp_path: Path) -> None:
    path = tmp_path / "game.json"
    assert run("play", "--players", "4", "--seed", "9", "--out", str(path)).returncode == 0
    record = json.loads(path.read_text(encoding="utf-8"))
    lines = run("show", str(path)).stdout.splitlines()
    state = parse(record).replay()
    turns = [a for a in record["actions"] if "resolve" not in a]
    # One line per turn, naming who played what and where they drew from.
    turn_lines = [line for line in lines if " plays " in line or " passes" in line]
    assert len(turn_lines) == len(turns)
    for action, line in zip(turns, turn_lines, strict=True):
        assert line.startswith(f"seat {action['seat']} (")
        if "play" in action:
            assert f"plays {action['play']['count']} {action['play']['ingredient']}" in line
        if "draw" in action and "Mamma Mia!" not in line:
            assert f"from the {action['draw']}" in line
    # One line per order revealed at a resolution, saying whether it was baked.
    reveals = [line for line in lines if " meets " in line]
    delivered = sum(len(d) for d in state.delivered)
    assert sum(": baked" in line for line in reveals) == delivered
    assert all(
        ("from the table" in line or "from hand" in line) for line in reveals if ": baked" in line
    )
    # The log follows the table from public events alone: it ends where the game does.
    left = [line for line in lines if line.startswith("  left on the table: ")]
    assert len(left) == 3
    table = ", ".join(f"{n} {kind}" for kind, n in zip(INGREDIENTS, state.table, strict=True) if n)
    assert left[-1] == f"  left on the table: {table or 'nothing'}"
    assert lines.count("== Game over after three rounds") == 1
    ranks = [line for line in lines if line.startswith("#")]
    assert len(ranks) == 4
    winners = " and ".join(f"seat {s} ({state.colours[s]})" for s in state.winners())
    assert lines[-1] == f"Winner{'s' * (len(state.winners()) > 1)}: {winners}"


def test_show_names_the_players_of_the_record(tmp_path: Path) -> None:
    record = dict(GOOD, meta={"names": ["Ada", "Bob"]})
    path = tmp_path / "named.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    lines = run("show", str(path)).stdout.splitlines()
    assert lines[0] == "Mamma Mia! for 2 players: seat 0 (red, Ada), seat 1 (yellow, Bob)"
    assert lines[-1] == (
        "(the record stops here, in round 1: seat 0 (red, Ada) to decide on red-mushroom)"
    )


WEIRD: list[Any] = [
    None,
    True,
    0,
    -1,
    7,
    1.5,
    "",
    "salami",
    "mamma-mia",
    "red-mixed",
    "supply",
    [],
    [1],
    {},
    {"salami": 1},
    10**30,
]


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*path, i))
    return out


def test_mangled_records_are_refused_as_records() -> None:
    # Every field of a good record replaced by odd JSON values, one at a time: the
    # reader raises RecordError (or another MammaMiaError), never anything else.
    base = then(
        stacked(["2 salami, 3 olive, pepper", "6 mushroom"]),
        play(0, "2 salami", "red-pineapple", "waiter"),
        play(1, "6 mushroom", None, "supply"),
    )
    rng = random.Random(5)
    paths = _paths(base)[1:]
    for _ in range(1500):
        record = json.loads(json.dumps(base))
        path = rng.choice(paths)
        parent = record
        for key in path[:-1]:
            parent = parent[key]
        if rng.random() < 0.8:
            parent[path[-1]] = rng.choice(WEIRD)
        else:
            del parent[path[-1]]
        try:
            parse(record).replay()
        except RecordError:
            pass
        except MammaMiaError as e:  # an impossible setup named by its rule
            assert getattr(e, "rule", None), e


@pytest.mark.parametrize("name", ["monotoni-needs-hand-baked", "tie-shared-win"])
def test_show_golden_log(name: str) -> None:
    # The whole log of two small records, pinned: the format is read by people.
    records = Path(__file__).parent / "records"
    done = run("show", str(records / f"{name}.json"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == (records / f"{name}.show.txt").read_text(encoding="utf-8")
