"""Command-line behaviours a first-time user meets, each through real subprocesses:
`mammamia watch` following a live match, the messages of a refused ladder key and an
unreachable server, the command list, the help texts and `serve` on a taken port."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from ports import restartable_port

from tests.conftest import MAMMAMIA, RunningServer

ROOT = Path(__file__).resolve().parents[1]


def run(
    *args: str, cwd: Path | None = None, timeout: float = 60, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MAMMAMIA), *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, **kwargs
    )


# -- mammamia watch -----------------------------------------------------------------------


def _create(server: RunningServer, players: int, seed: int) -> dict[str, Any]:
    done = run(
        "match",
        "create",
        "--server",
        server.address,
        "--organiser-key",
        server.organiser_key,
        "--players",
        str(players),
        "--seed",
        str(seed),
        "--deadline",
        "5",
    )
    assert done.returncode == 0, done.stderr
    created: dict[str, Any] = json.loads(done.stdout)
    return created


def _show(server: RunningServer, match_id: str, tmp_path: Path) -> list[str]:
    done = run(
        "match",
        "record",
        "--server",
        server.address,
        "--organiser-key",
        server.organiser_key,
        match_id,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    record.get("meta", {}).pop("names", None)  # watch knows no names
    path = tmp_path / f"{match_id}.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    shown = run("show", str(path))
    assert shown.returncode == 0, shown.stderr
    return shown.stdout.splitlines()


def _same_game(watched: list[str], shown: list[str]) -> None:
    """The watched lines are exactly show's lines of the game record."""
    assert watched == shown


def test_watch_follows_a_live_match_to_its_end(server: RunningServer, tmp_path: Path) -> None:
    created = _create(server, 3, seed=11)
    watcher = subprocess.Popen(
        [str(MAMMAMIA), "watch", "--server", server.address, created["match"]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.5)  # watching from before the first move
    bots = [
        subprocess.Popen(
            [
                str(MAMMAMIA),
                "bot",
                spec,
                "--server",
                server.address,
                "--token",
                token,
                "--log-format",
                "json",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for spec, token in zip(("random", "greedy", "counter"), created["tokens"], strict=True)
    ]
    try:
        out, err = watcher.communicate(timeout=120)
    finally:
        for bot in bots:
            bot.wait(timeout=60)
    assert watcher.returncode == 0, err
    watched = out.splitlines()
    assert watched[0].startswith("Mamma Mia! for 3 players: seat 0 (")
    assert watched[-1].startswith("Winner")
    _same_game(watched, _show(server, created["match"], tmp_path))


def test_watch_a_finished_part_then_the_rest(server: RunningServer, tmp_path: Path) -> None:
    """Joining a match already under way prints its history first."""
    created = _create(server, 2, seed=3)
    bots = [
        subprocess.Popen(
            [
                str(MAMMAMIA),
                "bot",
                "random",
                "--server",
                server.address,
                "--token",
                token,
                "--log-format",
                "json",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for token in created["tokens"]
    ]
    time.sleep(0.3)
    done = run("watch", "--server", server.address, created["match"], timeout=120)
    for bot in bots:
        bot.wait(timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    if lines[-1].startswith("Winner"):
        _same_game(lines, _show(server, created["match"], tmp_path))


def test_watch_an_unknown_match(server: RunningServer) -> None:
    done = run("watch", "--server", server.address, "no-such-match")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "no match 'no-such-match'" in done.stderr


def test_watch_without_a_server() -> None:
    address = f"127.0.0.1:{restartable_port()}"
    done = run("watch", "--server", address, "m1")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"is the server running at {address}?" in done.stderr


# -- ladder bots and unreachable servers ----------------------------------------------------


def test_a_refused_ladder_key_names_the_key_file_and_the_ways_out(
    server: RunningServer, tmp_path: Path
) -> None:
    (tmp_path / "alice.key").write_text("not-the-key\n")
    done = run(
        "bot",
        "random",
        "--server",
        server.address,
        "--ladder",
        "--name",
        "alice",
        "--log-format",
        "json",
        "--give-up",
        "5",
        cwd=tmp_path,
    )
    assert done.returncode == 2
    [message] = [line for line in done.stderr.splitlines() if line.startswith("mammamia bot")]
    assert "refused the bot's key" in message
    assert "alice.key" in message and "delete" in message and "--key-file" in message
    assert "ladder_entered" not in done.stderr


def test_a_ladder_bot_without_a_server_never_says_it_entered(tmp_path: Path) -> None:
    address = f"127.0.0.1:{restartable_port()}"
    done = run(
        "bot",
        "random",
        "--server",
        address,
        "--ladder",
        "--name",
        "bob",
        "--key=some-key",
        "--log-format",
        "json",
        "--give-up",
        "1.5",
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "ladder_entered" not in done.stderr
    assert "reconnecting" in done.stderr
    assert f"is the server running at {address}?" in done.stderr.splitlines()[-1]


def test_a_seat_without_a_server_asks_whether_it_runs(tmp_path: Path) -> None:
    address = f"127.0.0.1:{restartable_port()}"
    done = run(
        "bot",
        "random",
        "--server",
        address,
        "--token",
        "t",
        "--log-format",
        "json",
        "--give-up",
        "1",
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert f"is the server running at {address}?" in done.stderr.splitlines()[-1]


def test_registering_without_a_server_asks_whether_it_runs(tmp_path: Path) -> None:
    address = f"127.0.0.1:{restartable_port()}"
    done = run(
        "bot",
        "random",
        "--server",
        address,
        "--ladder",
        "--name",
        "carol",
        "--log-format",
        "json",
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert f"is the server running at {address}?" in done.stderr
    assert not (tmp_path / "carol.key").exists()


def test_organiser_and_ladder_commands_without_a_server_ask_whether_it_runs() -> None:
    address = f"127.0.0.1:{restartable_port()}"
    for args in (("match", "list", "--organiser-key", "k"), ("ladder", "standings")):
        done = run(*args, "--server", address)
        assert done.returncode == 1
        assert done.stderr.count("\n") == 1, done.stderr
        assert f"is the server running at {address}?" in done.stderr


# -- the command line's help ------------------------------------------------------------------


def test_no_arguments_lists_the_commands() -> None:
    done = run()
    assert done.returncode == 2
    for command in ("show", "arena", "bot", "serve", "match", "ladder", "demo", "watch"):
        assert f"\n    {command}" in done.stderr, done.stderr


def test_match_actions_have_descriptions() -> None:
    for action, words in (
        ("create", "seat token per seat"),
        ("record", "mammamia show"),
        ("list", "newest first"),
    ):
        done = run("match", action, "--help")
        assert done.returncode == 0
        assert words in " ".join(done.stdout.split())


def test_ladder_standings_defaults_to_the_local_server() -> None:
    done = run("ladder", "standings", "--help")
    assert "default 127.0.0.1:50051" in " ".join(done.stdout.split())


def test_demo_bots_help_mentions_copies() -> None:
    done = run("demo", "--help")
    text = " ".join(done.stdout.split())
    assert "each --copies times" in text


# -- serve ------------------------------------------------------------------------------------


def test_serve_on_a_taken_port_exits_2_and_leaves_no_database(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        db = tmp_path / "never.db"
        done = run(
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--db",
            str(db),
            "--organiser-key",
            "k",
            timeout=30,
        )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_serve_next_to_a_running_server_exits_2(server: RunningServer, tmp_path: Path) -> None:
    db = tmp_path / "second.db"
    done = run(
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(server.port),
        "--db",
        str(db),
        "--organiser-key",
        "k",
        timeout=30,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert not db.exists()
