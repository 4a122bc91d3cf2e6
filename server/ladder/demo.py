"""``mammamia demo``: a server, its embedded database and a ladder of built-in bots.

What ``make run`` starts, so a newcomer sees matches being played and standings
forming. Everything runs as real processes, exactly as a user would start them:

    mammamia serve --db mammamia.db --ladder-players 2-5 ...   the server
    mammamia bot random --server ADDR --ladder --name random-1 ...   one per bot

The bots' keys and every process's log live in ``<db>.demo/`` beside the database,
so the same bots come back (with their ratings) the next time; a fresh database
starts fresh bots. The terminal shows one line per finished match, the server's
warnings and errors, and the standings every ``--every`` seconds. The children run
in their own process groups: Ctrl-C reaches only this process, which stops the
server first (it drains: running matches are finished or marked aborted, nothing
half-written) and then the bots. SIGTERM (``kill``, ``timeout``, systemd, CI) and
SIGHUP (the terminal closed) stop them the same way: the children, in sessions of
their own, would never hear of either.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from types import FrameType
from typing import IO, Any

import structlog

log = structlog.get_logger()

STARTUP_TIMEOUT = 30.0
SERVER_DRAIN_TIMEOUT = 30.0
BOT_STOP_TIMEOUT = 10.0


def _mammamia() -> list[str]:
    """Returns the command that runs ``mammamia`` with this interpreter."""
    exe = Path(sys.executable).with_name("mammamia")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "mammamia"]


def _typed(mammamia: list[str]) -> str:
    """Returns how to type ``mammamia`` here: its name when the PATH finds this very
    executable, else its path (relative to the working directory when under it), as
    after ``make run``, where only ``.venv/bin/mammamia`` exists."""
    exe = Path(mammamia[0])
    if len(mammamia) > 1:
        return shlex.join(mammamia)
    found = shutil.which("mammamia")
    if found is not None and Path(found).resolve() == exe.resolve():
        return "mammamia"
    with contextlib.suppress(ValueError):
        return shlex.quote(str(exe.relative_to(Path.cwd())))
    return shlex.quote(str(exe))


def _interrupted(signum: int, frame: FrameType | None) -> None:
    """Raises KeyboardInterrupt: SIGTERM and SIGHUP stop the demo as Ctrl-C does."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _wait_for_port(port_file: Path, server: subprocess.Popen[bytes]) -> int:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with status {server.returncode} at start-up")
        with contextlib.suppress(FileNotFoundError, ValueError):
            return int(port_file.read_text().strip())
        time.sleep(0.1)
    raise RuntimeError(f"the server did not listen within {STARTUP_TIMEOUT:.0f} s")


def _ordinal(rank: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(rank, f"{rank}th")


def match_line(event: dict[str, Any]) -> str:
    """Returns one line about a finished ladder match, best seat first."""
    seats = sorted(zip(event["ranks"], event["names"], event["delivered"], strict=True))
    played = ", ".join(
        f"{name} {_ordinal(rank)} ({delivered} pizza{'s' * (delivered != 1)})"
        for rank, name, delivered in seats
    )
    return f"match {event['match']} ({len(seats)} players): {played}"


def competition_line(event: dict[str, Any]) -> str | None:
    """Returns one line about a step of the competition the server logged (a phase
    change, the finals' field or end, the release), or None for any other event."""
    name = event.get("competition")
    kind = event.get("event")
    if kind == "competition_phase":
        return f"competition {name}: {event['phase']} ({event['who']}: {event['reason']})"
    if kind == "competition_field":
        return f"competition {name}: the finals field is {', '.join(event['field'])}"
    if kind == "competition_finals_ended":
        return f"competition {name}: the finals ended ({event['reason']})"
    if kind == "competition_released":
        return f"competition {name}: results released by {event['who']}"
    return None


def _relay(lines: Iterable[bytes], log_file: IO[bytes]) -> None:
    """Copies the server's log to ``log_file``; shows finished matches and trouble."""
    for raw in lines:
        log_file.write(raw)
        log_file.flush()
        text = raw.decode("utf-8", "replace").rstrip()
        try:
            event = json.loads(text)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            if text and not text.startswith("organiser key:"):
                print(text, file=sys.stderr, flush=True)
        elif event.get("event") == "ladder_match_finished" and event.get("names"):
            print(match_line(event), file=sys.stderr, flush=True)
        elif (line := competition_line(event)) is not None:
            print(line, file=sys.stderr, flush=True)
        elif event.get("event") == "web_serving" and event.get("url"):
            print(f"web page: {event['url']}", file=sys.stderr, flush=True)
        elif event.get("level") in ("warning", "error", "critical"):
            print(f"server: {text}", file=sys.stderr, flush=True)


def _stop(process: subprocess.Popen[bytes], sig: int, timeout: float) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(sig)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        log.warning("demo_process_killed", pid=process.pid, timeout=timeout)
        process.kill()
        process.wait()


def run_demo(args: argparse.Namespace) -> int:
    """Runs the demo until Ctrl-C; returns the exit status (1 if the server failed)."""
    from client_sdk.logs import configure

    from .cli_standings import connect_command, fetch_standings, standings_table

    configure(args.log_format, cache=True)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _interrupted)
    db = Path(args.db)
    home = db.with_name(db.name + ".demo")
    if not db.exists() and home.exists():
        # A fresh database knows none of the old bots: their keys are worthless.
        shutil.rmtree(home)
    (home / "keys").mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(parents=True, exist_ok=True)
    port_file = Path(tempfile.mkdtemp(prefix="mammamia-demo-")) / "port"
    mammamia = _mammamia()
    serve = [
        *mammamia,
        "serve",
        "--host",
        args.host,
        "--port",
        str(args.port),
        "--port-file",
        str(port_file),
        "--db",
        str(db),
        "--log-format",
        "json",
        "--ladder-players",
        args.ladder_players,
        "--ladder-concurrency",
        str(args.ladder_concurrency),
        *(["--ladder-duplicate"] if getattr(args, "ladder_duplicate", False) else []),
        *(["--competition", args.competition] if getattr(args, "competition", None) else []),
        *(
            ["--web-port", str(args.web_port)]
            if getattr(args, "web_port", None) is not None
            else []
        ),
    ]
    server_log = open(home / "logs" / "server.log", "ab")  # noqa: SIM115 (closed below)
    logs: list[IO[bytes]] = [server_log]
    server = subprocess.Popen(
        serve, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    assert server.stdout is not None
    relay = threading.Thread(target=_relay, args=(server.stdout, server_log), daemon=True)
    relay.start()
    bots: list[subprocess.Popen[bytes]] = []
    try:
        try:
            port = _wait_for_port(port_file, server)
        except RuntimeError as e:
            log.error(
                "demo_server_failed",
                reason=str(e),
                command=" ".join(serve),
                hint=f"if port {args.port} is taken, choose another with --port",
            )
            return 1
        host = "127.0.0.1" if args.host in ("0.0.0.0", "::", "") else args.host
        address = f"{host}:{port}"
        typed = _typed(mammamia)
        standings_command = f"{typed} ladder standings --server {address}"
        connect = typed + connect_command(address).removeprefix("mammamia")
        names = []
        for spec in args.bots:
            for copy in range(1, args.copies + 1):
                name = f"{Path(spec.split(':')[0]).stem}-{copy}"
                names.append(name)
                out = open(home / "logs" / f"{name}.log", "ab")  # noqa: SIM115 (kept open)
                logs.append(out)
                bots.append(
                    subprocess.Popen(
                        [
                            *mammamia,
                            "bot",
                            spec,
                            "--server",
                            address,
                            "--ladder",
                            "--name",
                            name,
                            "--key-file",
                            str(home / "keys" / f"{name}.key"),
                        ],
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                        env={**os.environ, "MAMMAMIA_LOG_FORMAT": "json"},
                    )
                )
        log.info("demo_started", server=address, db=str(db), bots=names, logs=str(home / "logs"))
        print(
            f"\nMamma Mia! ladder demo: {len(names)} built-in bots play on {address}"
            f" (database {db}).\n"
            f"  standings: {standings_command}\n"
            + (
                f"  competition: {typed} competition status --server {address}\n"
                if getattr(args, "competition", None)
                else ""
            )
            + f"  your bot:  {connect}\n"
            "  how to write a bot: README.md, 'Writing a bot'. Ctrl-C stops everything.\n",
            file=sys.stderr,
            flush=True,
        )
        while server.poll() is None:
            time.sleep(args.every)
            if server.poll() is not None:
                break
            try:
                data = fetch_standings(address)
            except Exception as e:  # the server may be busy or going away: try again later
                log.warning("demo_standings_unavailable", reason=str(e))
                continue
            lines = standings_table(data)
            print(
                f"\n{data['matches_finished']} rated matches; standings ({standings_command}):",
                file=sys.stderr,
            )
            print("\n".join(lines), file=sys.stderr)
            print(
                f"your bot on this ladder: {connect}\n",
                file=sys.stderr,
                flush=True,
            )
        log.error("demo_server_exited", status=server.returncode)
        return 1
    except KeyboardInterrupt as stop:
        log.info("demo_stopping", signal=str(stop) or "SIGINT")
        return 0
    finally:
        try:
            _shutdown(server, bots)
        except KeyboardInterrupt:
            # A second Ctrl-C: no more waiting.
            for process in [server, *bots]:
                if process.poll() is None:
                    process.kill()
        relay.join(timeout=5)
        for log_file in logs:
            log_file.close()
        shutil.rmtree(port_file.parent, ignore_errors=True)
        log.info("demo_stopped")


def _shutdown(server: subprocess.Popen[bytes], bots: list[subprocess.Popen[bytes]]) -> None:
    # Server first: it finishes or aborts the running matches while the bots still play.
    _stop(server, signal.SIGTERM, SERVER_DRAIN_TIMEOUT)
    for bot in bots:
        if bot.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                bot.send_signal(signal.SIGINT)
    for bot in bots:
        _stop(bot, signal.SIGINT, BOT_STOP_TIMEOUT)
