"""A real ``mammamia rules-serve`` in a subprocess, on port 0, and a client of it built
from the generated stubs alone (mammamia_pb), as a bot in another language would be."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from mammamia_pb import rules_pb2_grpc

MAX_STATES = 40
START_TIMEOUT_S = 20


@dataclass
class RulesService:
    """A running service: its process, address and a stub on one channel."""

    process: subprocess.Popen[bytes]
    address: str
    channel: grpc.Channel
    stub: rules_pb2_grpc.RulesStub


def start_service(directory: Path, *args: str) -> RulesService:
    """Returns a started ``mammamia rules-serve`` (port 0) once its port file is written;
    fails the test with its log when it does not come up in time."""
    port_file = directory / "port"
    log = (directory / "rules.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mammamia",
            "rules-serve",
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--log-format",
            "json",
            *args,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not port_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait()
            pytest.fail(f"rules-serve did not start: {(directory / 'rules.log').read_text()}")
        time.sleep(0.05)
    address = f"127.0.0.1:{port_file.read_text().strip()}"
    channel = grpc.insecure_channel(address)
    grpc.channel_ready_future(channel).result(timeout=START_TIMEOUT_S)
    return RulesService(process, address, channel, rules_pb2_grpc.RulesStub(channel))


def stop_service(service: RulesService) -> int:
    """Returns the exit status of the service after SIGTERM (killed after 10 s)."""
    service.channel.close()
    service.process.terminate()
    try:
        return service.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        service.process.kill()
        service.process.wait()
        raise


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RulesService]:
    """Yields a service holding at most MAX_STATES states, for the module's tests."""
    service = start_service(tmp_path_factory.mktemp("rules"), "--max-states", str(MAX_STATES))
    try:
        yield service
    finally:
        assert stop_service(service) == 0
