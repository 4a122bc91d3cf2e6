"""End to end on PostgreSQL: ``mammamia serve --db postgresql://...`` plays a ladder of
built-in bots and stores every match and record there (``ladder rerate`` agrees), a
second server with the same host id on the same database refuses to start, and a
PostgreSQL restart under a running server turns its health NOT_SERVING while writes
fail and SERVING once one succeeds again."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mammamia import loads
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.db.connection import connect

from .postgres import PostgresServer, wait_accepting

MAMMAMIA = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "mammamia"
MAMMAMIA_TIMEOUT_S = 60
BOTS = {"random-1": "random", "greedy-1": "greedy", "counter-1": "counter"}


def _rated(address: str) -> int:
    with grpc.insecure_channel(address) as channel:
        return int(
            pb_grpc.LadderStub(channel)
            .Standings(pb.StandingsRequest(), timeout=10)
            .matches_finished
        )


def _wait(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except grpc.RpcError:
            value = None
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.2)


def test_a_ladder_plays_on_postgresql_and_rerate_agrees(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., Any],
    postgres_url: str,
    tmp_path: Path,
) -> None:
    from mammamia.cli import main

    server = start_server(db=postgres_url, ladder_concurrency=2, ladder_players="2-3")
    ladder_bots(server.address, BOTS)
    _wait(lambda: _rated(server.address) >= 6, 120, "6 rated ladder matches")

    # A second server with the same host id (by default its advertised address) on the
    # same database is refused, the first one untouched.
    second = subprocess.run(
        [
            str(MAMMAMIA),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--db",
            postgres_url,
            "--organiser-key",
            "k",
            "--host-id",
            server.address,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=MAMMAMIA_TIMEOUT_S,
    )
    assert second.returncode == 2, second.stderr
    assert f"another server uses this database as host '{server.address}'" in second.stderr
    assert server.running

    with grpc.insecure_channel(server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        recent = ladder.Matches(pb.MatchesRequest(name="counter-1", limit=5), timeout=10).matches
        done = [m for m in recent if m.status == pb.MATCH_STATUS_FINISHED]
        assert done, [(m.match_id, m.status) for m in recent]
        record = ladder.GetRecord(pb.GetRecordRequest(match_id=done[0].match_id), timeout=10)
        state = loads(record.json).replay()
        assert state.is_over and list(state.winners()) == list(done[0].winners)

    assert server.stop() == 0
    db = connect(postgres_url)
    ((rated,),) = db.execute("SELECT COUNT(*) FROM ladder_matches WHERE rated = 1").fetchall()
    ((stored,),) = db.execute(
        "SELECT COUNT(*) FROM matches WHERE status = 'finished'"
        " AND record IS NOT NULL AND ladder = 1"
    ).fetchall()
    db.close()
    assert rated >= 6 and stored >= rated
    assert main(["ladder", "rerate", "--db", postgres_url]) == 0


def test_health_follows_a_postgresql_restart(
    start_server: Callable[..., Any], postgres: PostgresServer, postgres_url: str
) -> None:
    server = start_server(db=postgres_url, drain_seconds=1)

    def create_match(channel: grpc.Channel) -> None:
        pb_grpc.OrganiserStub(channel).CreateMatch(
            pb.CreateMatchRequest(players=2),
            timeout=MAMMAMIA_TIMEOUT_S,
            metadata=(("organiser-key", server.organiser_key),),
        )

    def until(channel: grpc.Channel, wanted: int) -> None:
        # Check, polled (a Watch stream left open would hold up the server's exit).
        health = health_pb2_grpc.HealthStub(channel)
        _wait(
            lambda: health.Check(health_pb2.HealthCheckRequest(), timeout=10).status == wanted,  # type: ignore[attr-defined]
            MAMMAMIA_TIMEOUT_S,
            f"health status {wanted}",
        )

    def listed(channel: grpc.Channel) -> int:
        # ListMatches first waits for every write queued before it.
        return len(
            pb_grpc.OrganiserStub(channel)
            .ListMatches(
                pb.ListMatchesRequest(),
                timeout=10,
                metadata=(("organiser-key", server.organiser_key),),
            )
            .matches
        )

    with grpc.insecure_channel(server.address) as channel:
        create_match(channel)
        until(channel, health_pb2.HealthCheckResponse.SERVING)
        assert listed(channel) == 1  # its row is written before the stop
        postgres.stop()
        try:
            create_match(channel)  # its row cannot be written
            until(channel, health_pb2.HealthCheckResponse.NOT_SERVING)
        finally:
            postgres.start()
            wait_accepting(postgres)
        create_match(channel)  # written on a new connection
        until(channel, health_pb2.HealthCheckResponse.SERVING)
        # Reads connect again too: the matches written before and after are listed.
        assert listed(channel) >= 2
    assert server.stop() == 0
    logs = server.logs()
    assert "storage_failing" in logs and "storage_recovered" in logs
