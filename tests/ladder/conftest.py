"""Ladder test helpers: standings, waiting, reading the database. (The bots that
enter a ladder come from the ``ladder_bots`` fixture of ``tests/conftest.py``.)"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[2]
MAMMAMIA = ROOT / ".venv" / "bin" / "mammamia"


def standings(address: str, players: int = 0) -> pb.StandingsResponse:
    """Returns the ladder's standings from a running server."""
    with grpc.insecure_channel(address) as channel:
        return pb_grpc.LadderStub(channel).Standings(
            pb.StandingsRequest(players=players), timeout=10
        )


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Returns the first truthy ``predicate()``; fails the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except grpc.RpcError:
            value = None  # the server is restarting
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def finished_at_least(address: str, n: int) -> Callable[[], int]:
    """Returns a predicate: the number of rated matches once it reaches ``n``."""

    def check() -> int:
        finished = standings(address).matches_finished
        return finished if finished >= n else 0

    return check


def query(db_path: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Returns the rows of one query on the server's database (read-only)."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()
