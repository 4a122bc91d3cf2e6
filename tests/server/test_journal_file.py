"""The journal's file beside an SQLite database (``server.db.journal_file``): what it
holds survives reopening, ended matches go, it stays bounded, and what a failure can
leave behind (a line cut short, a damaged line, a missing input) costs only the
matches it touches. An earlier version's SQLite journal is moved into it."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from server.db.connection import StorageError
from server.db.journal_file import HEADER, JournalFile, journal_file
from server.db.matches import Storage
from server.inputs import Start, Tick


def _answer(n: int) -> str:
    return json.dumps({"k": "answer", "seat": n % 2, "decision": f"d-{n}", "at": n})


def test_what_is_appended_is_held_after_reopening_and_ended_matches_are_not(tmp_path: Path) -> None:
    path = tmp_path / "arena.db.journal"
    journal = JournalFile(path)
    journal.setup("m-1", json.dumps({"players": 2}))
    journal.setup("m-2", json.dumps({"players": 3}))
    for n in range(3):
        journal.input("m-1", n, _answer(n))
        journal.input("m-2", n, _answer(10 + n))
    journal.end("m-2")
    journal.close()

    held = JournalFile(path).held()
    assert list(held) == ["m-1"]
    assert held["m-1"].setup == {"players": 2}
    assert held["m-1"].ordered() == [json.loads(_answer(n)) for n in range(3)]


def test_a_line_cut_short_or_damaged_costs_only_what_it_held(tmp_path: Path) -> None:
    path = tmp_path / "arena.db.journal"
    journal = JournalFile(path)
    for match_id in ("m-1", "m-2", "m-3"):
        journal.setup(match_id, json.dumps({"players": 2}))
        journal.input(match_id, 0, _answer(0))
    journal.close()
    lines = path.read_bytes().split(b"\n")
    # m-2's input damaged in the middle of the file, m-3's last line cut short.
    damaged = [b"I\tm-2\t0\t{not json" if line.startswith(b"I\tm-2") else line for line in lines]
    path.write_bytes(b"\n".join(damaged).rstrip(b"\n") + b'\nI\tm-3\t1\t{"k": "ans')

    with capture_logs() as logs:
        held = JournalFile(path).held()
    assert list(held) == ["m-1"]
    assert held["m-1"].ordered() == [json.loads(_answer(0))]
    skipped = [e["match"] for e in logs if e["event"] == "journal_line_skipped"]
    assert skipped == ["m-2", "m-3"]
    assert [
        (e["match"], e["reason"]) for e in logs if e["event"] == "journal_match_incomplete"
    ] == [("m-2", "a line of it is damaged"), ("m-3", "a line of it is damaged")]


def test_a_line_that_names_no_match_sets_the_file_aside(tmp_path: Path) -> None:
    path = tmp_path / "arena.db.journal"
    journal = JournalFile(path)
    journal.setup("m-1", json.dumps({"players": 2}))
    journal.close()
    damaged = HEADER + b"\x00\x00\x00\n" + path.read_bytes()[len(HEADER) :]
    path.write_bytes(damaged)
    with capture_logs() as logs:
        assert JournalFile(path).held() == {}
    assert (tmp_path / "arena.db.journal.damaged").read_bytes() == damaged
    assert logs[0]["event"] == "journal_set_aside"


def test_a_match_with_a_missing_input_is_not_held(tmp_path: Path) -> None:
    path = tmp_path / "arena.db.journal"
    journal = JournalFile(path)
    journal.setup("m-1", json.dumps({"players": 2}))
    journal.input("m-1", 0, _answer(0))
    journal.input("m-1", 2, _answer(2))
    journal.close()
    with capture_logs():
        assert JournalFile(path).held() == {}


def test_a_file_that_is_not_a_journal_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "arena.db.journal"
    path.write_bytes(b"SQLite format 3\x00...")
    with capture_logs() as logs:
        journal = JournalFile(path)
    assert journal.held() == {}
    assert (tmp_path / "arena.db.journal.damaged").read_bytes() == b"SQLite format 3\x00..."
    assert path.read_bytes() == HEADER
    assert logs[0]["event"] == "journal_set_aside"


def test_the_file_stays_bounded_by_the_running_matches(tmp_path: Path) -> None:
    path = tmp_path / "arena.db.journal"
    journal = JournalFile(path, compact_bytes=64 << 10)
    journal.setup("m-long", json.dumps({"players": 2}))
    largest = 0
    for match in range(2000):
        match_id = f"m-{match}"
        journal.setup(match_id, json.dumps({"players": 4}))
        for n in range(20):
            journal.input(match_id, n, _answer(n))
        journal.end(match_id)
        journal.input("m-long", match, _answer(match))
        largest = max(largest, path.stat().st_size)
    journal.close()
    # 2000 matches of about 1.3 KB each went through, 2.6 MB; the file never held more
    # than twice what the running match holds (or the bound), and that match kept
    # every one of its inputs.
    held = JournalFile(path).held()
    running = sum(len(line) for line in held["m-long"].lines)
    assert largest <= max(64 << 10, 2 * running) + 2048
    assert list(held) == ["m-long"]
    assert held["m-long"].ordered() == [json.loads(_answer(n)) for n in range(2000)]


def test_an_input_that_cannot_be_written_fails_its_future(tmp_path: Path) -> None:
    async def go() -> None:
        storage = Storage(tmp_path / "arena.db")
        journal = storage.open_journal()
        journal.begin("m-1", {"players": 2})
        journal.close()  # the file is gone from under the journal
        done = journal.append("m-1", Start(1.0))
        with pytest.raises(StorageError, match="journal"):
            await done
        storage.close()

    with capture_logs() as logs:
        asyncio.run(go())
    assert any(e["event"] == "journal_write_failed" for e in logs)


def test_an_earlier_versions_sqlite_journal_is_moved_into_the_file(tmp_path: Path) -> None:
    db = tmp_path / "arena.db"
    old = sqlite3.connect(f"{db}.inputs")
    old.executescript(
        "CREATE TABLE match_setups (match_id TEXT PRIMARY KEY, setup TEXT NOT NULL);"
        "CREATE TABLE match_inputs (match_id TEXT NOT NULL, n INTEGER NOT NULL, "
        "input TEXT NOT NULL, PRIMARY KEY (match_id, n));"
    )
    old.execute("INSERT INTO match_setups VALUES ('m-1', ?)", (json.dumps({"players": 2}),))
    old.executemany(
        "INSERT INTO match_inputs VALUES ('m-1', ?, ?)",
        [(n, json.dumps({"k": "tick", "at": n, "absent": [1]})) for n in (1, 0, 2)],
    )
    old.commit()
    old.close()

    with capture_logs() as logs:
        storage = Storage(db)
        journal = storage.open_journal()
    [unfinished] = journal.unfinished()
    assert unfinished.match_id == "m-1" and unfinished.setup == {"players": 2}
    assert list(unfinished.inputs) == [Tick(float(n), (1,)) for n in range(3)]
    assert not Path(f"{db}.inputs").exists()
    assert journal_file(db).exists()
    assert any(e["event"] == "journal_moved" and e["matches"] == 1 for e in logs)
    journal.close()
    storage.close()
