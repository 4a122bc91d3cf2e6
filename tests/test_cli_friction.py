"""Command-line behaviours a first-time user meets, each through real subprocesses:
`mammamia watch` following a live match, the messages of a refused ladder key and an
unreachable server, the command list, the help texts, `serve` on a taken port, `demo`
stopped by SIGTERM and its banner's commands, and `conformance` with a client that does
not start."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import MAMMAMIA, RunningServer
from tests.ports import restartable_port

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


# -- mammamia demo: what it prints, and stopping it --------------------------------------


def _demo_banner(demo: subprocess.Popen[bytes], err: Path, timeout: float = 60) -> str:
    """Returns the demo's stderr once its banner (every bot started) is out."""
    deadline = time.monotonic() + timeout
    while "Mamma Mia! ladder demo" not in (text := err.read_text()):
        assert demo.poll() is None, text[-3000:]
        assert time.monotonic() < deadline, f"no banner in {timeout:g} s: {text[-3000:]}"
        time.sleep(0.2)
    return text


def test_sigterm_stops_the_demo_and_everything_it_started(tmp_path: Path) -> None:
    """As `kill`, `timeout`, systemd and CI stop it: the server and every bot with it.
    Also run without .venv/bin on the PATH (after `make run`): the banner's commands
    work as printed, and the web page is on the --web-port asked for."""
    port, web_port = restartable_port(), restartable_port()
    path = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != MAMMAMIA.parent
    )
    err = tmp_path / "demo.err"
    with open(err, "wb") as out:
        demo = subprocess.Popen(
            [
                str(MAMMAMIA),
                "demo",
                "--port",
                str(port),
                "--web-port",
                str(web_port),
                "--db",
                str(tmp_path / "mammamia.db"),
                "--copies",
                "1",
                "--log-format",
                "json",
            ],
            stdout=subprocess.DEVNULL,
            stderr=out,
            cwd=tmp_path,
            env={**os.environ, "PATH": path},
        )
    started: list[psutil.Process] = []
    try:
        text = _demo_banner(demo, err)
        started = psutil.Process(demo.pid).children(recursive=True)
        assert len(started) >= 4, started  # the server and three bots
        assert f"web page: http://127.0.0.1:{web_port}/" in text
        [standings] = re.findall(r"^  standings: (.+)$", text, re.M)
        assert standings.startswith(shlex.quote(str(MAMMAMIA)) + " ladder standings")
        shown = subprocess.run(
            shlex.split(standings), capture_output=True, text=True, timeout=60, env={"PATH": path}
        )
        assert shown.returncode == 0, shown.stderr
        [connect] = re.findall(r"^  your bot:  (.+)$", text, re.M)
        assert connect.startswith(shlex.quote(str(MAMMAMIA)) + " bot ")
        demo.send_signal(signal.SIGTERM)
        assert demo.wait(timeout=90) == 0, err.read_text()[-3000:]
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        _, alive = psutil.wait_procs(started, timeout=5)
        for process in alive:
            process.kill()
    assert alive == [], [" ".join(p.cmdline()[1:3]) for p in alive]
    assert '"event": "demo_stopped"' in err.read_text()


def test_demo_help_offers_the_web_port_its_hint_names() -> None:
    done = run("demo", "--help")
    assert done.returncode == 0
    assert "--web-port PORT" in done.stdout


# -- mammamia conformance: a client that does not start ----------------------------------


def test_conformance_says_which_packages_a_node_client_lacks(tmp_path: Path) -> None:
    """A Node.js client run before `npm ci`: the verdict holds the line that says why
    (buried in a long trace otherwise) and the command that installs its packages."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    client = tmp_path / "client"
    client.mkdir()
    (client / "package.json").write_text('{"dependencies": {"@grpc/grpc-js": "^1.10"}}')
    (client / "bot.js").write_text('require("@grpc/grpc-js");\n')
    done = run(
        "conformance",
        "--client",
        "node client/bot.js --server {server} --token {token}",
        "--only",
        "turns",
        "--json",
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    [turns] = [row for row in json.loads(done.stdout)["scenarios"] if row["name"] == "turns"]
    assert turns["why"] == (
        "the client exited with code 1 without taking its seat: Error: Cannot find module "
        "'@grpc/grpc-js' (its packages are not installed: run npm ci --prefix client)"
    ), turns
