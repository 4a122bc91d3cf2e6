"""Processes the benchmarks start: a ``mammamia serve`` server, and ``python -m`` helpers.

Every server runs in its own process on 127.0.0.1, on a port the system picks, with
a throwaway database, exactly as ``mammamia serve`` is started by an organiser::

    with Server(directory, "--ladder-concurrency", "8") as server:
        server.address, server.organiser_key, server.pid
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final

import grpc
import psutil
from grpc_health.v1 import health_pb2

ROOT: Final = Path(__file__).resolve().parents[1]
ORGANISER_KEY: Final = "bench-organiser-key"
START_TIMEOUT: Final = 30.0
STOP_TIMEOUT: Final = 30.0
HEALTH_CHECK: Final = "/grpc.health.v1.Health/Check"


def mammamia() -> list[str]:
    """Returns the command that runs ``mammamia`` with this interpreter's environment."""
    exe = Path(sys.executable).with_name("mammamia")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "mammamia.cli"]


def python_module(module: str, *args: str, log: IO[bytes] | None = None) -> subprocess.Popen[bytes]:
    """Returns a started ``python -m module args`` run from the project root (so the
    ``bench`` package is found), its output going to ``log``."""
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        stdout=log or subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )


def cpu_seconds(processes: Sequence[psutil.Process]) -> float:
    """Returns the CPU seconds (user and system) ``processes`` have used so far; one
    that has exited counts for nothing."""
    total = 0.0
    for p in processes:
        with contextlib.suppress(psutil.Error):
            times = p.cpu_times()
            total += times.user + times.system
    return total


def written_figures(out: Path) -> dict[str, Any] | None:
    """Returns the JSON figures a helper process wrote to ``out``, or None when it
    wrote none (it failed, or was stopped first)."""
    try:
        figures: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return figures


def output_end(log: Path, chars: int = 300) -> str:
    """Returns the end of a helper process's output ("" when there is none), for the
    message that says it failed."""
    return log.read_text(errors="replace")[-chars:].strip() if log.exists() else ""


def wait_for_port(
    port_file: Path, process: subprocess.Popen[bytes], timeout: float = START_TIMEOUT
) -> int:
    """Returns the port a child wrote to ``port_file``; raises RuntimeError if the child
    exits or writes nothing within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"{_program(process)} exited with status {process.returncode} before it listened"
            )
        with contextlib.suppress(FileNotFoundError, ValueError):
            return int(port_file.read_text().strip())
        time.sleep(0.02)
    raise RuntimeError(f"{_program(process)} wrote no port to {port_file} in {timeout:.0f} s")


def _program(process: subprocess.Popen[bytes]) -> str:
    """Returns the program a child runs: its first argument (or its command string)."""
    args = process.args
    first = args if isinstance(args, (str, bytes, os.PathLike)) else args[0]
    return os.fsdecode(first)


def stop(process: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT) -> None:
    """Stops a child with SIGTERM, or SIGKILL when it is still there after ``timeout``."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Server:
    """A ``mammamia serve`` process on 127.0.0.1 with a database in ``directory``;
    ``extra`` are further ``serve`` flags (a later ``--db`` or ``--port`` wins), and
    ``prefix`` a command the server runs under (``taskset -c 0``). Started by ``with``,
    stopped on the way out."""

    def __init__(self, directory: Path, *extra: str, prefix: Sequence[str] = ()) -> None:
        self.directory = directory
        self.extra = extra
        self.prefix = tuple(prefix)
        self.organiser_key = ORGANISER_KEY
        self.address = ""
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int:
        """Returns the server's process id."""
        assert self.process is not None
        return self.process.pid

    def start(self) -> Server:
        """Returns this server once it answers the health check with SERVING."""
        port_file = self.directory / "port"
        self._log = open(self.directory / "server.log", "ab")  # noqa: SIM115 (closed by stop)
        self.process = subprocess.Popen(
            [
                *self.prefix,
                *mammamia(),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--port-file",
                str(port_file),
                "--db",
                str(self.directory / "bench.db"),
                "--organiser-key",
                self.organiser_key,
                "--log-format",
                "json",
                "--drain-seconds",
                "1",
                *self.extra,
                # Further flags for every benchmark's server, to compare settings
                # (BENCH_SERVE_FLAGS="--event-loop asyncio").
                *shlex.split(os.environ.get("BENCH_SERVE_FLAGS", "")),
            ],
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            cwd=self.directory,
            env={k: v for k, v in os.environ.items() if not k.startswith("MAMMAMIA_")},
        )
        port = wait_for_port(port_file, self.process)
        self.address = f"127.0.0.1:{port}"
        _wait_serving(self.address)
        return self

    def stop(self) -> None:
        """Stops the server (SIGTERM: it drains; SIGKILL if it takes too long)."""
        if self.process is not None:
            stop(self.process)
        if self._log is not None:
            self._log.close()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _wait_serving(address: str, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(address) as channel:
        # The health service's Check, bound by its method path: the stubs of
        # health_pb2_grpc.HealthStub declare no methods, so the call is typed here.
        check = channel.unary_unary(
            HEALTH_CHECK,
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        while True:
            with contextlib.suppress(grpc.RpcError):
                reply = check(health_pb2.HealthCheckRequest(), timeout=2)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server at {address} is not SERVING after {timeout:.0f} s")
            time.sleep(0.05)
