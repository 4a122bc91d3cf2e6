"""Shared fixtures: a real game server in a subprocess.

``server`` (function scope) starts ``.venv/bin/mammamia serve`` on port 0 with its
own SQLite file in the test's tmp_path and waits until the standard health check
answers SERVING. It yields a ``RunningServer``:

    server.address        "127.0.0.1:PORT"
    server.organiser_key  the organiser key ("test-key")
    server.db_path        the SQLite file (kept across restarts)
    server.process        the subprocess.Popen
    server.log_path       its stderr (JSON log lines); server.logs() reads it
    server.stop()         SIGTERM, then wait for the drain to end (returns the exit code)
    server.kill()         SIGKILL (a crash)
    server.restart()      stop, then start again on the same database and a new port

``start_server`` is a factory for tests that need several servers, other options or
restarts: ``start_server(directory=None, **options)`` where each option becomes a
``serve`` flag (``deadline_ms=200`` -> ``--deadline-ms 200``, ``drain_seconds=1``,
``start_timeout=2``; ``True`` adds a bare flag), ``env={...}`` adds environment
variables and ``args=[...]`` raw arguments; with ``tls_cert=`` and ``tls_key=`` it
serves TLS and ``address`` is "localhost:PORT" (the ``self_signed_certificate``
fixture makes such a pair). Every server started is killed at the
end of the test if it still runs. Note that matches live in the server's memory:
a restart aborts the matches that were running.

``ladder_bots`` yields ``start(address, {"name": "spec", ...})``, which starts one real
``mammamia bot SPEC --ladder --name NAME`` process per bot (keys in tmp_path, logs in
``tmp_path/bots``); every process is stopped (SIGINT) at the end of the test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parents[1]
MAMMAMIA = ROOT / ".venv" / "bin" / "mammamia"
ORGANISER_KEY = "test-key"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 60.0
# Every server a test starts serves its web page on a free port unless told otherwise,
# so that servers running side by side never contend for the default one.
os.environ.setdefault("MAMMAMIA_WEB_PORT", "0")


# Sets the open-file limit, then becomes the command that follows.
_LIMITED = (
    "import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, "
    "(int(sys.argv[1]), int(sys.argv[2]))); os.execv(sys.argv[3], sys.argv[3:])"
)


def _open_files(options: dict[str, Any]) -> list[str]:
    """Returns the command prefix that lowers the server's open-file limit to
    ``options["open_files"]`` (a (soft, hard) pair) before it runs, or none when the
    option is absent.

    Not a ``preexec_fn``: that runs Python in a fork of this process, which has gRPC
    threads of its own (the tests' clients). A server started that way once aborted
    before it logged anything (``epoll_wait error: Bad file descriptor``, while gRPC
    here said it skipped its fork handlers)."""
    limit = options.get("open_files")
    if limit is None:
        return []
    soft, hard = limit
    return [sys.executable, "-c", _LIMITED, str(soft), str(hard)]


class RunningServer:
    """A ``mammamia serve`` subprocess on 127.0.0.1 and a free port."""

    def __init__(self, directory: Path, options: dict[str, Any]) -> None:
        self.directory = directory
        self.db_path = directory / "arena.db"
        self.organiser_key = ORGANISER_KEY
        self.options = options
        self.address = ""
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = directory / "server.log"
        self._runs = 0
        self.start()

    def _command(self) -> list[str]:
        options = dict(self.options)
        options.pop("env", None)
        options.pop("open_files", None)
        raw = [str(a) for a in options.pop("args", [])]
        cmd = [
            str(MAMMAMIA),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--port-file",
            str(self.directory / "port"),
            "--db",
            str(self.db_path),
            "--log-format",
            "json",
        ]
        if "organiser_key_file" not in options:
            cmd += ["--organiser-key", self.organiser_key]
        for name, value in options.items():
            flag = "--" + name.replace("_", "-")
            if value is True:
                cmd.append(flag)
            elif value is not False and value is not None:
                cmd += [flag, str(value)]
        return cmd + raw

    def start(self) -> None:
        """Starts the process and returns once the health check answers SERVING."""
        port_file = self.directory / "port"
        port_file.unlink(missing_ok=True)
        self._runs += 1
        env = {**os.environ, **self.options.get("env", {})}
        env.pop("MAMMAMIA_ORGANISER_KEY", None)
        with open(self.log_path, "ab") as err, open(self.directory / "server.out", "ab") as out:
            self.process = subprocess.Popen(
                [*_open_files(self.options), *self._command()],
                stdout=out,
                stderr=err,
                env=env,
                cwd=self.directory,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not port_file.exists():
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"mammamia serve exited with {self.process.returncode}:\n{self.logs()[-3000:]}"
                )
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"mammamia serve wrote no port file in {START_TIMEOUT_S} s")
            time.sleep(0.02)
        self.port = int(port_file.read_text())
        tls = self.options.get("tls_cert")
        self.address = f"{'localhost' if tls else '127.0.0.1'}:{self.port}"
        channel = (
            grpc.secure_channel(self.address, grpc.ssl_channel_credentials(Path(tls).read_bytes()))
            if tls
            else grpc.insecure_channel(self.address)
        )
        self._wait_serving(channel, deadline)

    def _wait_serving(self, channel: grpc.Channel, deadline: float) -> None:
        with channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while True:
                try:
                    reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=2)  # type: ignore[attr-defined]
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"server at {self.address} is not SERVING")
                time.sleep(0.05)

    @property
    def running(self) -> bool:
        """Whether the process is alive."""
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """Returns the exit code after SIGTERM and the end of the drain."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        """Kills the process at once (SIGKILL), as a crash would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT_S)

    def restart(self) -> RunningServer:
        """Returns this server after stopping it and starting it again on the same
        database (with a new port: read ``address`` again)."""
        if self.running:
            self.stop()
        self.start()
        return self

    def logs(self) -> str:
        """Returns what the server has logged so far (all runs)."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@pytest.fixture
def self_signed_certificate(tmp_path: Path) -> tuple[Path, Path]:
    """Returns (key, certificate): new PEM files of a self-signed certificate for
    ``localhost``, made with openssl."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return key, cert


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., RunningServer]]:
    """Yields a factory ``start_server(directory=None, **options)`` of real servers."""
    started: list[RunningServer] = []

    def start(directory: Path | None = None, **options: Any) -> RunningServer:
        if directory is None:
            directory = tmp_path / f"server{len(started)}"
        directory.mkdir(parents=True, exist_ok=True)
        server = RunningServer(directory, options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


@pytest.fixture
def server(start_server: Callable[..., RunningServer]) -> RunningServer:
    """Returns a real server on 127.0.0.1 and a free port, SERVING."""
    return start_server()


@pytest.fixture
def ladder_bots(tmp_path: Path) -> Iterator[Callable[..., dict[str, subprocess.Popen[bytes]]]]:
    """Yields ``start(address, {name: spec}, *options)``, which enters real bot
    processes (each with ``options`` added to its command line) and returns them by
    name."""
    processes: list[subprocess.Popen[bytes]] = []
    logs = tmp_path / "bots"
    logs.mkdir()

    def start(
        address: str, bots: dict[str, str], *options: str
    ) -> dict[str, subprocess.Popen[bytes]]:
        started = {}
        for name, spec in bots.items():
            with open(logs / f"{name}.log", "ab") as out:
                started[name] = subprocess.Popen(
                    [
                        str(MAMMAMIA),
                        "bot",
                        spec,
                        "--server",
                        address,
                        "--ladder",
                        "--name",
                        name,
                        "--key-file",
                        str(tmp_path / f"{name}.key"),
                        "--give-up",
                        "60",
                        *options,
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
        processes.extend(started.values())
        return started

    yield start
    for p in processes:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    for p in processes:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# A real PostgreSQL server for the storage tests (tests/storage/postgres.py).
# pytest's name for tests/storage/postgres.py (the test modules import it as .postgres);
# mypy knows it as tests.storage.postgres.
from storage.postgres import (  # type: ignore[import-not-found]  # noqa: E402, F401
    database,
    postgres,
    postgres_url,
)
