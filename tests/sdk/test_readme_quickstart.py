"""The README's "Writing a bot" quickstart works as written, from a fresh directory."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from .support import MAMMAMIA, create_match

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120


def quickstart() -> str:
    """Returns the README's "Writing a bot" section."""
    text = (ROOT / "README.md").read_text()
    start = text.index("## Writing a bot")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", quickstart(), re.S)


def commands(program: str) -> list[list[str]]:
    """Returns the shell commands of the quickstart that start with ``mammamia program``."""
    found = []
    for block in blocks("sh"):
        for line in block.splitlines():
            words = shlex.split(line.split("#")[0].rstrip(" &"))
            if words[:2] == ["mammamia", program]:
                found.append(words)
    return found


def run(cmd: list[str], cwd: Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, **kwargs)


def write_quickstart_files(directory: Path) -> None:
    bot, try_it = blocks("python")[:2]
    (directory / "my_bot.py").write_text(bot)
    (directory / "try_it.py").write_text(try_it)


def test_the_quickstart_bot_plays_locally_and_in_the_arena(tmp_path: Path) -> None:
    write_quickstart_files(tmp_path)
    local = run([sys.executable, "try_it.py"], tmp_path)
    assert local.returncode == 0, local.stderr
    assert "('my-bot', 'greedy')" in local.stdout
    assert "bot_decision_replaced" not in local.stderr
    show = run([MAMMAMIA, "show", "game.json"], tmp_path)
    assert show.returncode == 0 and show.stdout

    (against_random, arena) = commands("arena")
    assert against_random[2:] == ["my_bot.py:MyBot", "random", "--games", "200", "--players", "2"]
    games = arena.index("--games")
    arena[games + 1] = "8"
    out = run([MAMMAMIA, *arena[1:], "--jobs", "2", "--json"], tmp_path)
    assert out.returncode == 0, out.stderr
    stats = {b["name"]: b for b in json.loads(out.stdout)["bots"]}
    assert set(stats) == {"my-bot", "random", "greedy", "counter"}
    assert stats["my-bot"]["games"] == 8 and stats["my-bot"]["replaced"] == 0


def test_the_quickstart_bot_plays_a_match_on_a_server(server: Any, tmp_path: Path) -> None:
    write_quickstart_files(tmp_path)
    bots = commands("bot")
    seat_commands = [c for c in bots if "--token" in c]
    assert len(seat_commands) == 3
    _, tokens = create_match(server, len(seat_commands), seed=2)
    procs = []
    for words, token in zip(seat_commands, tokens, strict=True):
        words = list(words)
        words[words.index("--server") + 1] = server.address
        words[words.index("--token") + 1] = token
        procs.append(
            subprocess.Popen(
                [MAMMAMIA, *words[1:]],
                cwd=tmp_path,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    try:
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=TIMEOUT_S)
            assert proc.returncode == 0, err
            results.append(json.loads(out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert [r["status"] for r in results] == ["finished"] * 3
    assert [r["seat"] for r in results] == [0, 1, 2]


def test_the_quickstart_bot_beats_random_as_the_readme_says(tmp_path: Path) -> None:
    """The README's arena command against random, run exactly as printed (seed 0, the
    CPU count of worker processes): at least 75% wins over 200 two-player games, and
    the figures printed under it are the ones it gives."""
    write_quickstart_files(tmp_path)
    against_random = commands("arena")[0]
    out = run([MAMMAMIA, *against_random[1:]], tmp_path)
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()[1:]
    assert header.split()[:4] == ["bot", "games", "wins", "win"]
    mine = next(r.split() for r in rows if r.startswith("my-bot"))
    games, wins = int(mine[1]), float(mine[2])
    assert games == 200 and wins / games >= 0.75, out.stdout
    assert mine[-2:] == ["0", "0"]  # never late, never replaced
    printed = re.search(r"The first prints.*?```\n(.*?)```", quickstart(), re.S)
    assert printed and printed[1] == out.stdout
