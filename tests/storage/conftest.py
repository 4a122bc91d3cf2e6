"""Storage test fixtures: ``database`` is a target of each kind, an SQLite file and a
PostgreSQL URL (the tests that take it run once on each); ``postgres`` and
``postgres_url`` come from :mod:`tests.storage.postgres` through ``tests/conftest.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from .postgres import PostgresServer


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Returns a database to open: an SQLite file's path, or a new PostgreSQL
    database's URL (skipped where PostgreSQL cannot run)."""
    if request.param == "sqlite":
        return str(tmp_path / "arena.db")
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.database()
