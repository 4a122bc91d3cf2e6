"""The competition file: read and checked, with errors that name the file and the
field; `mammamia serve --competition` refuses a wrong one with one line (exit 2)."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest

from server.competition.config import PHASES, CompetitionFileError, load, parse

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "docs" / "examples" / "quick-competition.toml"
MAMMAMIA = ROOT / ".venv" / "bin" / "mammamia"

GOOD = """
name = "cup"
players = [2, 3]
[schedule]
registration = 0
ladder = 10
freeze = 20
finals = 25
[finals]
field = ["a", "b", "c"]
top = 2
budget = 30
tables = [3]
"""


def test_the_quick_example_runs_its_whole_schedule_in_under_three_minutes() -> None:
    quick = load(QUICK)
    starts = dict(quick.starts(0.0))
    assert [p for p, _ in quick.schedule] == list(PHASES)
    closed = starts["closed"]
    assert closed is not None and closed < 180
    assert quick.finals.field == 6 and quick.finals.confidence == 0.95
    assert quick.text == QUICK.read_text(encoding="utf-8")


def test_offsets_count_from_the_start_and_the_latest_due_phase_wins() -> None:
    cup = parse(GOOD, "cup.toml")
    assert cup.start is None and cup.players == (2, 3)
    assert cup.finals.field == ("a", "b", "c") and cup.finals.grace == 10.0
    assert cup.due("registration", 100.0, 105.0) is None
    assert cup.due("registration", 100.0, 110.0) == "ladder"
    assert cup.due("registration", 100.0, 121.0) == "freeze"  # a phase may be skipped
    assert cup.due("freeze", 100.0, 124.0) is None
    assert cup.due("finals", 100.0, 10_000.0) is None  # closed is not scheduled


def test_dates_are_iso_8601_with_their_zone() -> None:
    text = GOOD.replace("players = [2, 3]", 'players = 3\nstart = "2026-06-01T12:00:00Z"')
    text = text.replace("finals = 25", 'finals = "2026-06-01T13:00:00+00:00"')
    cup = parse(text, "cup.toml")
    assert dict(cup.starts(0.0))["finals"] == cup.start + 3600  # type: ignore[operator]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (('name = "cup"', "name = 3"), "name"),
        (("players = [2, 3]", "players = [1, 3]"), "players"),
        (("freeze = 20", "freeze = 5"), "schedule.freeze"),
        (("ladder = 10\n", ""), "schedule.ladder"),
        (("top = 2", "top = 7"), "finals.top"),
        (("budget = 30", "budget = 0"), "finals.budget"),
        (("tables = [3]", "tables = [6]"), "finals.tables"),
        (("top = 2", "top = 2\nconfidence = 2"), "finals.confidence"),
        (("top = 2", "top = 2\nextra = 1"), "finals.extra"),
        (("finals = 25", 'finals = "tomorrow"'), "schedule.finals"),
    ],
)
def test_an_error_names_the_file_and_the_field(change: tuple[str, str], field: str) -> None:
    old, new = change
    assert old in GOOD
    with pytest.raises(CompetitionFileError) as e:
        parse(GOOD.replace(old, new, 1), "cup.toml")
    assert str(e.value).startswith(f"cup.toml: {field}: ")
    assert "\n" not in str(e.value)


def test_serve_refuses_a_wrong_file_with_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace("top = 2", "top = 9"), encoding="utf-8")
    done = subprocess.run(
        [
            str(MAMMAMIA),
            "serve",
            "--port",
            "0",
            "--db",
            str(tmp_path / "x.db"),
            "--competition",
            str(bad),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert f"{bad}: finals.top: " in last


def test_not_toml_is_named_as_such(tmp_path: Path) -> None:
    with pytest.raises(CompetitionFileError, match="not TOML"):
        parse("name = ", "x.toml")
    assert tomllib.loads(QUICK.read_text(encoding="utf-8"))["name"] == "quick"


def test_the_commands_phases_are_the_servers() -> None:
    from server.competition import cli_wire

    assert cli_wire.PHASES == PHASES
