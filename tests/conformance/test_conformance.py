"""The conformance kit: ``mammamia conformance`` passes the built-in Python bot and the
Node.js bot, and fails clients that leave before their match ends.

Each test runs the real command (``.venv/bin/mammamia conformance --json``) with only
the scenarios it needs; the kit starts its own server in-process.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mammamia import ORDERS
from server.conformance import cli, kit, ladder, positions

ROOT = Path(__file__).resolve().parents[2]
MAMMAMIA = ROOT / ".venv" / "bin" / "mammamia"
HERE = Path(__file__).resolve().parent
NODE_BOT = ROOT / "bots" / "node"
PYTHON_BOT = f"{shlex.quote(str(MAMMAMIA))} bot random --server {{server}} --token {{token}}"
PYTHON_LADDER_BOT = (
    f"{shlex.quote(str(MAMMAMIA))} bot random --server {{server}} --ladder --name {{name}} "
    "--key-file {key_file}"
)


def conformance(
    client: str | None, *only: str, timeout: float = 30, ladder_client: str | None = None
) -> tuple[int, dict[str, Any], str]:
    """Returns (exit code, the JSON report, stderr) of the kit run on ``client`` (the
    single-seat command) and ``ladder_client`` (the ladder command)."""
    args = [str(MAMMAMIA), "conformance", "--json", "--timeout", str(timeout)]
    if client is not None:
        args += ["--client", client]
    if ladder_client is not None:
        args += ["--ladder-client", ladder_client]
    for name in only:
        args += ["--only", name]
    done = subprocess.run(args, capture_output=True, text=True, timeout=240, cwd=ROOT)
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def rows(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in report.get("scenarios", [])}


def table(report: dict[str, Any]) -> str:
    return "\n".join(
        f"{r['name']}: {'pass' if r['passed'] else 'FAIL'}: {r['why']}"
        + "".join(f"\n    {line}" for line in r["stderr_tail"])
        for r in report.get("scenarios", [])
    )


def test_the_python_random_bot_passes_every_scenario() -> None:
    code, report, err = conformance(PYTHON_BOT, ladder_client=PYTHON_LADDER_BOT)
    assert set(rows(report)) == set(kit.SCENARIOS + ladder.SCENARIOS), err[-2000:]
    assert code == 0 and report["passed"], table(report)


def test_the_node_bot_passes_every_scenario() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    if not (NODE_BOT / "node_modules").is_dir():
        pytest.skip("bots/node/node_modules is missing (npm ci --prefix bots/node)")
    bot = f"{shlex.quote(node)} {shlex.quote(str(NODE_BOT / 'bot.js'))} --server {{server}}"
    code, report, err = conformance(
        f"{bot} --token {{token}}",
        ladder_client=f"{bot} --ladder --name {{name}} --key-file {{key_file}}",
    )
    assert set(rows(report)) == set(kit.SCENARIOS + ladder.SCENARIOS), err[-2000:]
    assert code == 0 and report["passed"], table(report)


def test_a_client_that_quits_after_one_decision_fails() -> None:
    client = (
        f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'quitter.py'))} "
        "--server {server} --token {token}"
    )
    code, report, err = conformance(client, "turns", "end", "bombastica")
    assert code == 1, err[-2000:]
    found = rows(report)
    assert set(found) == {"turns", "end", "bombastica"}
    assert not any(r["passed"] for r in found.values()), table(report)
    assert "before the match ended" in found["end"]["why"]
    assert found["turns"]["exit_code"] == 0
    # The decision it did answer is judged as answered; what fails is the leaving.
    assert "before the match ended" in found["bombastica"]["why"], table(report)
    assert any("leaving" in line for line in found["turns"]["stderr_tail"])


def test_a_client_that_exits_at_once_fails() -> None:
    client = f"{shlex.quote(sys.executable)} -c pass {{server}} {{token}}"
    code, report, _ = conformance(client, "end", "resume")
    assert code == 1
    found = rows(report)
    assert set(found) == {"end", "resume"}
    assert "without taking its seat" in found["resume"]["why"], table(report)
    assert "before the match ended" in found["end"]["why"], table(report)


def test_a_ladder_client_that_exits_at_once_fails() -> None:
    client = f"{shlex.quote(sys.executable)} -c pass {{server}} {{name}} {{key_file}}"
    code, report, _ = conformance(None, "ladder-enter", ladder_client=client)
    assert code == 1
    found = rows(report)
    assert set(found) == {"ladder-enter"}
    why = found["ladder-enter"]["why"]
    assert "exited with code 0 before it entered the ladder" in why, table(report)
    assert "0 Register calls, 0 Enter calls" in why


def test_a_ladder_client_that_enters_again_and_again_and_ignores_sigterm_fails() -> None:
    client = (
        f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'reenterer.py'))} "
        "--server {server} --name {name} --key-file {key_file}"
    )
    code, report, _ = conformance(
        None, "ladder-enter", "ladder-key", "ladder-replaced", ladder_client=client
    )
    assert code == 1
    found = rows(report)
    assert set(found) == {"ladder-enter", "ladder-key", "ladder-replaced"}
    # It registers and enters, but leaves SIGTERM to kill it.
    assert found["ladder-enter"]["why"].startswith("killed by SIGTERM"), table(report)
    assert not any(r["passed"] for r in found.values()), table(report)
    # Five Enter calls with a refused key: more than the kit allows.
    assert "called Ladder.Enter 5 times with a refused key" in found["ladder-key"]["why"]
    # Replaced, it entered again: the newer copy was replaced in its turn.
    assert "the older client entered again" in found["ladder-replaced"]["why"], table(report)
    assert any("ALREADY_EXISTS" in line for line in found["ladder-replaced"]["stderr_tail"])


@pytest.mark.parametrize(
    "client, message",
    [
        ("true {server}", "no {token}"),
        ("'unterminated {server} {token}", "--client"),
        ("no-such-program-here {server} {token}", "cannot run"),
    ],
)
def test_bad_usage_exits_2_with_one_line(client: str, message: str) -> None:
    done = subprocess.run(
        [str(MAMMAMIA), "conformance", "--client", client],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.count("\n") == 1
    assert done.stdout == ""


def test_an_unknown_scenario_is_bad_usage() -> None:
    done = subprocess.run(
        [str(MAMMAMIA), "conformance", "--client", "x {server} {token}", "--only", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "nope" in done.stderr


def test_the_command_lists_the_kits_scenarios() -> None:
    assert cli.NAMES == kit.SCENARIOS
    assert cli.LADDER_NAMES == ladder.SCENARIOS


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "--client CMD, --ladder-client CMD or both"),
        (["--ladder-client", "true {server} {name}"], "no {key_file}"),
        (["--client", "true {server} {token}", "--only", "ladder-enter"], "needs --ladder-client"),
        (
            ["--ladder-client", "true {server} {name} {key_file}", "--only", "turns"],
            "needs --client",
        ),
    ],
)
def test_bad_ladder_usage_exits_2_with_one_line(args: list[str], message: str) -> None:
    done = subprocess.run(
        [str(MAMMAMIA), "conformance", *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize("name", kit.DECISION_SCENARIOS)
def test_each_decision_position_asks_its_decision(name: str) -> None:
    where = positions.find(name)
    again = positions.find(name)
    assert (where.seed, len(where.played)) == (again.seed, len(again.played))
    game = where.game
    assert game.phase == "resolve" and game.to_act == where.seat
    assert game.deciding == where.order
    bakes = [a for a in game.legal_actions() if a.bake]  # type: ignore[union-attr]
    kind = ORDERS[where.order].kind
    expected = {
        "minimale": "minimale",
        "monotoni": "monotoni",
        "bombastica": "bombastica",
        "add-from-hand": "standard",
    }.get(name, kind)
    assert kind == expected and bakes
    if name in ("minimale", "monotoni"):
        assert len({b.ingredient for b in bakes}) > 1


def test_a_client_that_stays_after_the_end_fails_and_is_stopped() -> None:
    # The random bot, then a shell that lingers: killed with its process group.
    client = (
        f'sh -c \'"$0" bot random --server "$1" --token "$2"; sleep 30\' '
        f"{shlex.quote(str(MAMMAMIA))} {{server}} {{token}}"
    )
    code, report, _ = conformance(client, "end")
    assert code == 1
    assert rows(report)["end"]["why"].startswith("still running"), table(report)
