"""The Node.js bot on a ladder of two hosts sharing one PostgreSQL database: entered
through one host, it plays the seats of matches that run on the other, at the
address the assignment names."""

from __future__ import annotations

import re
import subprocess
from typing import Any

from server.db.connection import connect
from tests.ports import restartable_port

RUN_TIMEOUT_S = 90


def test_node_bot_plays_its_seat_on_the_host_the_assignment_names(
    start_server: Any, ladder_bots: Any, node_bot: list[str], postgres_url: str
) -> None:
    port_a, port_b = restartable_port(), restartable_port()

    def flags(port: int, name: str) -> list[str]:
        return ["--port", str(port), "--advertise", f"127.0.0.1:{port}", "--host-id", name]

    # Host A forms no match (it asks for 5 players, and 3 bots wait): every match
    # runs on B, whichever host its bots entered through.
    a = start_server(db=postgres_url, ladder_players="5", args=flags(port_a, "host-a"))
    b = start_server(
        db=postgres_url, ladder_players="2-3", ladder_concurrency=2, args=flags(port_b, "host-b")
    )
    ladder_bots(b.address, {"py-random-1": "random", "py-random-2": "random"})
    done = subprocess.run(
        [*node_bot, "--server", a.address, "--ladder", "--name", "node-a", "--matches", "2"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assigned = re.findall(r" info assigned .*", done.stderr)
    assert len(assigned) == 2 and all(f"127.0.0.1:{port_b}" in line for line in assigned), assigned
    assert len(re.findall(r" info match_ended .*status=finished", done.stderr)) == 2
    # (Stopped first: a host's drain waits until the ladder has stored every result.)
    assert a.stop() == 0 and b.stop() == 0
    db = connect(postgres_url)
    try:
        played = db.execute(
            "SELECT m.host, m.status FROM ladder_matches m JOIN"
            " ladder_results r ON r.match_id = m.match_id"
            " WHERE r.name = 'node-a'"
        ).fetchall()
    finally:
        db.close()
    assert sorted(tuple(r) for r in played) == [("host-b", "finished")] * 2
