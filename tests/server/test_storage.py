"""The database on real SQLite files: writes run on one writer thread in the order
given, a match's end is stored whole and once, closing runs every queued write, and a
process killed in the middle of writing leaves no row half-written."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from server.db.matches import Storage
from server.db.writer import Writer
from server.status import MatchStatus


def _rows(path: Path) -> dict[str, sqlite3.Row]:
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        return {r["id"]: r for r in db.execute("SELECT * FROM matches")}


async def _end(
    storage: Storage,
    match_id: str,
    status: MatchStatus = MatchStatus.FINISHED,
    record: str = "{}",
    names: tuple[str, ...] = ("a", "b"),
    *,
    winners: Sequence[int] = (),
    ranks: Sequence[int] = (),
    delivered: Sequence[int] = (),
    reason: str | None = None,
) -> bool:
    """Returns whether this call ended the match (Storage.end_match for two players)."""
    return await storage.end_match(
        match_id,
        status,
        record,
        players=2,
        names=names,
        ladder=False,
        created="2026-01-01T00:00:00.000+00:00",
        winners=winners,
        ranks=ranks,
        delivered=delivered,
        reason=reason,
    )


def test_writes_run_in_the_order_given_on_one_thread_that_is_not_the_loop() -> None:
    async def go() -> tuple[list[int], set[int], int]:
        writer = Writer()
        order: list[int] = []
        threads: set[int] = set()

        def write(i: int) -> int:
            order.append(i)
            threads.add(threading.get_ident())
            return i * i

        for i in range(50):
            writer.send(write, i)
        assert await writer.run(write, 50) == 2500
        writer.close()
        return order, threads, threading.get_ident()

    order, threads, loop_thread = asyncio.run(go())
    assert order == list(range(51))
    assert len(threads) == 1 and loop_thread not in threads


def test_a_match_is_stored_as_it_goes_and_its_end_once(tmp_path: Path) -> None:
    path = tmp_path / "arena.db"

    async def go() -> tuple[str, bool, bool]:
        storage = Storage(path)
        storage.add_match("m1", 2, ["", ""], False, "2026-01-01T00:00:00.000+00:00")
        storage.set_names("m1", ["ann", "bob"])
        storage.set_running("m1")
        await storage.writer.flush()
        running = _rows(path)["m1"]["status"]
        first = await _end(
            storage,
            "m1",
            record='{"first": 1}',
            names=("ann", "bob"),
            winners=[1],
            ranks=[2, 1],
            delivered=[1, 3],
        )
        # The same end again, a late start and a late name change: nothing changes.
        second = await _end(storage, "m1", MatchStatus.ABORTED, '{"second": 2}', reason="late")
        storage.add_match("m1", 2, ["x", "y"], True, "2027-01-01T00:00:00.000+00:00")
        storage.set_running("m1")
        storage.set_names("m1", ["zed", "zoe"])
        storage.close()
        return running, first, second

    running, first, second = asyncio.run(go())
    assert (running, first, second) == ("running", True, False)
    row = _rows(path)["m1"]
    assert (row["status"], row["record"], row["reason"]) == ("finished", '{"first": 1}', None)
    assert json.loads(row["names"]) == ["ann", "bob"]
    assert (json.loads(row["winners"]), json.loads(row["ranks"]), json.loads(row["delivered"])) == (
        [1],
        [2, 1],
        [1, 3],
    )


def test_an_end_is_stored_whole_even_if_the_match_row_never_was(tmp_path: Path) -> None:
    path = tmp_path / "arena.db"

    async def go() -> bool:
        storage = Storage(path)
        stored = await _end(storage, "lost", MatchStatus.ABORTED, '{"r": 1}', reason="cut off")
        storage.close()
        return stored

    assert asyncio.run(go()) is True
    row = _rows(path)["lost"]
    assert (
        row["status"],
        row["players"],
        json.loads(row["names"]),
        row["record"],
        row["reason"],
    ) == ("aborted", 2, ["a", "b"], '{"r": 1}', "cut off")


def test_closing_runs_every_queued_write(tmp_path: Path) -> None:
    path = tmp_path / "arena.db"

    async def go() -> None:
        storage = Storage(path)
        for i in range(300):
            storage.add_match(f"m{i}", 3, ["", "", ""], i % 2 == 0, "2026-01-01T00:00:00.000+00:00")
            storage.set_running(f"m{i}")
        storage.close()

    asyncio.run(go())
    rows = _rows(path)
    assert len(rows) == 300
    assert {r["status"] for r in rows.values()} == {"running"}


# A process that writes matches as fast as it can and says how many ends it has stored.
_WRITER = """
import asyncio, sys
from server.db.matches import Storage

async def main():
    storage = Storage(sys.argv[1])
    for i in range(100_000):
        storage.add_match(f"m{i}", 2, ["a", "b"], False, "2026-01-01T00:00:00.000+00:00")
        storage.set_running(f"m{i}")
        await storage.end_match(f"m{i}", "finished", '{"record": %d}' % i, players=2,
                                names=["a", "b"], ladder=False,
                                created="2026-01-01T00:00:00.000+00:00", winners=[0])
        print(i, flush=True)

asyncio.run(main())
"""


def test_a_process_killed_while_writing_leaves_no_row_half_written(tmp_path: Path) -> None:
    path = tmp_path / "arena.db"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)], cwd=root, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        announced = -1
        for _ in range(200):  # bounded: kill after 200 announced ends
            line = proc.stdout.readline()
            if not line:
                break
            if line.strip().isdigit():  # the writer's own lines (its logs go there too)
                announced = int(line)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
    assert announced >= 0, "the writer process announced nothing"
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = _rows(path)
    for i in range(announced + 1):  # every end announced is stored
        assert rows[f"m{i}"]["status"] == "finished"
    for row in rows.values():  # and every row is whole
        if row["status"] == "finished":
            assert json.loads(row["record"]) == {"record": int(row["id"][1:])}
            assert json.loads(row["winners"]) == [0]
        else:
            assert row["status"] in ("waiting", "running") and row["record"] is None
    # A server starting on that file marks the cut-off match aborted.
    storage = Storage(path)
    cut = storage.abort_unfinished("crash")
    storage.close()
    assert all(_rows(path)[m]["status"] == "aborted" for m in cut)
