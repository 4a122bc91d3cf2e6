"""``mammamia demo`` (what ``make run`` starts): matches are played, standings form,
the log says what to do next, and Ctrl-C stops everything."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import grpc
import pytest

from tests.ports import restartable_port

from .conftest import MAMMAMIA, query, standings, wait_until


def test_demo_plays_a_ladder_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    port = restartable_port()
    db = tmp_path / "mammamia.db"
    err = tmp_path / "demo.err"
    with open(err, "wb") as out:
        demo = subprocess.Popen(
            [
                str(MAMMAMIA),
                "demo",
                "--port",
                str(port),
                "--db",
                str(db),
                "--copies",
                "1",
                "--every",
                "1",
                "--log-format",
                "json",
            ],
            stdout=subprocess.DEVNULL,
            stderr=out,
            cwd=tmp_path,
        )
    try:
        deadline = time.monotonic() + 90
        while not re.search(r"^[1-9]\d* rated matches; standings", err.read_text(), re.M):
            assert demo.poll() is None, err.read_text()[-3000:]
            if time.monotonic() > deadline:
                pytest.fail("the demo printed no standings with a rated match in 90 s")
            time.sleep(0.2)
        address = f"127.0.0.1:{port}"
        wait_until(
            lambda: (
                {s.name for s in standings(address).standings}
                == {"random-1", "greedy-1", "counter-1"}
            ),
            60,
            "every demo bot rated",
        )
        log = err.read_text()
        assert f"mammamia ladder standings --server {address}" in log
        assert f"--server {address} --ladder --name my-bot" in log
        assert re.search(r"^web page: http://127\.0\.0\.1:\d+/", log, re.M)
        # One line per finished match, best seat first.
        assert re.search(r"^match m-\S+ \([2-5] players\): \S+ 1st \(\d+ pizzas?\)", log, re.M)
    finally:
        demo.send_signal(signal.SIGINT)
        assert demo.wait(timeout=60) == 0
    # Everything stopped: the server no longer answers, the results are stored.
    with pytest.raises(grpc.RpcError):
        standings(address)
    assert '"event": "demo_stopped"' in err.read_text()
    assert query(db, "SELECT COUNT(*) FROM ladder_matches WHERE status = 'running'") == [(0,)]
    home = tmp_path / "mammamia.db.demo"
    assert sorted(p.name for p in (home / "keys").iterdir()) == [
        "counter-1.key",
        "greedy-1.key",
        "random-1.key",
    ]
    assert '"event": "drain_done"' in (home / "logs" / "server.log").read_text()
