"""Storage faults are loud at start-up: a second server on a database file another
server uses refuses to start, and a damaged file is refused; each with one line and
exit 2, before anything is served."""

from __future__ import annotations

import subprocess
from pathlib import Path

from server.storage import Storage

from .client import MAMMAMIA

TIMEOUT_S = 60


def _serve(db: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MAMMAMIA), "serve", "--host", "127.0.0.1", "--port", "0",
                           "--db", str(db), "--organiser-key", "k"],
                          cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S)


def test_a_second_server_on_the_same_database_refuses_to_start(server, tmp_path):
    second = _serve(server.db_path, tmp_path)
    assert second.returncode == 2
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "another server uses this database" in lines[0]
    # The first server is untouched and still serving.
    assert server.process is not None and server.process.poll() is None


def test_a_damaged_database_is_refused(tmp_path):
    db = tmp_path / "arena.db"
    storage = Storage(db)
    for i in range(200):
        storage.add_match(f"m-{i:04}", 2, ["a" * 50, "b" * 50], False, "2026-01-01T00:00:00")
    storage.close()
    data = bytearray(db.read_bytes())
    assert len(data) > 3 * 4096
    data[4096:3 * 4096] = b"\x5a" * (2 * 4096)        # pages 2 and 3: garbage
    db.write_bytes(bytes(data))
    result = _serve(db, tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged" in lines[0], result.stderr
