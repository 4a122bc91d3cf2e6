"""Storage faults are loud. At start-up a second server on a database file another
server uses refuses to start, and a damaged file is refused; each with one line and
exit 2, before anything is served. While the server runs, health is NOT_SERVING for
as long as its writes fail."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from server.db.matches import Storage

from .client import MAMMAMIA

if TYPE_CHECKING:
    from tests.conftest import RunningServer

TIMEOUT_S = 60


def _serve(db: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(MAMMAMIA),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--db",
            str(db),
            "--organiser-key",
            "k",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def test_a_second_server_on_the_same_database_refuses_to_start(
    server: RunningServer, tmp_path: Path
) -> None:
    second = _serve(server.db_path, tmp_path)
    assert second.returncode == 2
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "another server uses this database" in lines[0]
    # The first server is untouched and still serving.
    assert server.process is not None and server.process.poll() is None


def test_a_damaged_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "arena.db"
    storage = Storage(db)
    for i in range(200):
        storage.add_match(f"m-{i:04}", 2, ["a" * 50, "b" * 50], False, "2026-01-01T00:00:00")
    storage.close()
    data = bytearray(db.read_bytes())
    assert len(data) > 3 * 4096
    data[4096 : 3 * 4096] = b"\x5a" * (2 * 4096)  # pages 2 and 3: garbage
    db.write_bytes(bytes(data))
    result = _serve(db, tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged" in lines[0], result.stderr


def test_health_is_not_serving_while_writes_fail(server: RunningServer) -> None:
    import sqlite3

    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from mammamia_pb import arena_pb2 as pb
    from mammamia_pb import arena_pb2_grpc as pb_grpc

    def create_match(channel: grpc.Channel) -> None:
        pb_grpc.OrganiserStub(channel).CreateMatch(
            pb.CreateMatchRequest(players=2),
            timeout=TIMEOUT_S,
            metadata=(("organiser-key", server.organiser_key),),
        )

    def status(channel: grpc.Channel) -> int:
        health = health_pb2_grpc.HealthStub(channel)
        reply = health.Check(  # type: ignore[attr-defined]
            health_pb2.HealthCheckRequest(), timeout=TIMEOUT_S
        )
        status: int = reply.status
        return status

    def until(channel: grpc.Channel, wanted: int) -> None:
        # Health.Watch sends the status now and at each change.
        for reply in health_pb2_grpc.HealthStub(channel).Watch(  # type: ignore[attr-defined]
            health_pb2.HealthCheckRequest(), timeout=TIMEOUT_S
        ):
            if reply.status == wanted:
                return

    # Another process holds the write lock: the server's writes fail once SQLite's
    # busy timeout runs out.
    blocker = sqlite3.connect(server.db_path, isolation_level=None, timeout=1)
    blocker.execute("BEGIN EXCLUSIVE")
    with grpc.insecure_channel(server.address) as channel:
        assert status(channel) == health_pb2.HealthCheckResponse.SERVING
        create_match(channel)
        until(channel, health_pb2.HealthCheckResponse.NOT_SERVING)
        blocker.execute("ROLLBACK")
        create_match(channel)
        until(channel, health_pb2.HealthCheckResponse.SERVING)
    blocker.close()
    assert "storage_failing" in server.logs() and "storage_recovered" in server.logs()


def test_the_ladder_s_failing_writes_turn_health_and_its_next_write_restores_it(
    start_server: Callable[..., RunningServer],
) -> None:
    import sqlite3

    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from mammamia_pb import arena_pb2 as pb
    from mammamia_pb import arena_pb2_grpc as pb_grpc

    server = start_server(ladder_players="2-3")

    def until(channel: grpc.Channel, wanted: int) -> None:
        for reply in health_pb2_grpc.HealthStub(channel).Watch(  # type: ignore[attr-defined]
            health_pb2.HealthCheckRequest(service="mammamia.v1.Ladder"), timeout=TIMEOUT_S
        ):
            if reply.status == wanted:
                return

    blocker = sqlite3.connect(server.db_path, isolation_level=None, timeout=1)
    blocker.execute("BEGIN EXCLUSIVE")
    with grpc.insecure_channel(server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        try:
            ladder.Register(pb.RegisterRequest(name="alpha"), timeout=TIMEOUT_S)
        except grpc.RpcError as e:
            # The database's failure, not the caller's: not a refusal's code.
            assert e.code() not in (
                grpc.StatusCode.INVALID_ARGUMENT,
                grpc.StatusCode.ALREADY_EXISTS,
            )
        else:
            raise AssertionError("a write went through a locked database")
        until(channel, health_pb2.HealthCheckResponse.NOT_SERVING)
        blocker.execute("ROLLBACK")
        ladder.Register(pb.RegisterRequest(name="alpha"), timeout=TIMEOUT_S)
        until(channel, health_pb2.HealthCheckResponse.SERVING)
    blocker.close()
    assert "storage_failing" in server.logs() and "storage_recovered" in server.logs()
