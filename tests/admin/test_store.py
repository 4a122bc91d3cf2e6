"""The audit trail and the switches as the database keeps them, on SQLite and on
PostgreSQL: appended in order and read a page at a time; a switch turned with its
audit entry in one transaction; a change that changes nothing writes nothing; and
the notices a pause sends on every Enter stream; and no statement of the server
changes an audit row once written."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from server.db.admin import LADDER_PAUSED, REGISTRATION_CLOSED, AdminStore, SwitchRow
from server.ladder.lobby import Assignment, Entries, Notice, new_stream


def test_the_trail_is_appended_in_order_and_read_by_pages(database: str) -> None:
    store = AdminStore(database)
    try:
        seqs = [
            store.append(100.0 + i, "alice", "match.create", f"m-{i}", "", {"players": 2})
            for i in range(5)
        ]
        assert seqs == sorted(seqs) and len(set(seqs)) == 5
        first = store.entries(0, 2)
        assert [r.target for r in first] == ["m-0", "m-1"]
        rest = store.entries(first[-1].seq, 10)
        assert [r.target for r in rest] == ["m-2", "m-3", "m-4"]
        assert rest[0].operator == "alice" and rest[0].detail == {"players": 2}
        assert store.entries(rest[-1].seq, 10) == []
    finally:
        store.close()


def test_a_switch_is_turned_with_its_audit_entry(database: str) -> None:
    store = AdminStore(database)
    try:
        assert store.switches() == {
            LADDER_PAUSED: SwitchRow(LADDER_PAUSED),
            REGISTRATION_CLOSED: SwitchRow(REGISTRATION_CLOSED),
        }
        # Off and asked to be off: nothing changes, nothing is appended.
        assert not store.turn(LADDER_PAUSED, False, 1.0, "bob", "why not", "ladder.resume")
        assert store.entries(0, 10) == []
        assert store.turn(LADDER_PAUSED, True, 2.0, "bob", "a slow bot", "ladder.pause")
        # On again: who and why change, and that is on the trail too.
        assert store.turn(LADDER_PAUSED, True, 3.0, "alice", "still slow", "ladder.pause")
        assert store.switch(LADDER_PAUSED) == SwitchRow(
            LADDER_PAUSED, True, "alice", "still slow", 3.0
        )
        assert store.turn(LADDER_PAUSED, False, 4.0, "bob", "fixed", "ladder.resume")
        assert store.switches()[LADDER_PAUSED] == SwitchRow(
            LADDER_PAUSED, False, "bob", "fixed", 4.0
        )
        assert not store.switches()[REGISTRATION_CLOSED].on
        assert [(r.operator, r.action, r.target, r.reason) for r in store.entries(0, 10)] == [
            ("bob", "ladder.pause", LADDER_PAUSED, "a slow bot"),
            ("alice", "ladder.pause", LADDER_PAUSED, "still slow"),
            ("bob", "ladder.resume", LADDER_PAUSED, "fixed"),
        ]
    finally:
        store.close()


def test_a_notice_reaches_every_stream_between_its_seats() -> None:
    async def scenario() -> None:
        entries = Entries()
        ada = entries.open("ada", new_stream(), lambda: None)
        bo = entries.open("bo", new_stream(), lambda: None)
        seat = Assignment("m1", "token", 0, 2)
        entries.tell("ada", seat)
        entries.notify("the ladder is paused: a slow bot")
        bo.notify("only to bo")
        assert await anext(ada) == seat
        assert await anext(ada) == Notice("the ladder is paused: a slow bot")
        assert await anext(bo) == Notice("the ladder is paused: a slow bot")
        assert await anext(bo) == Notice("only to bo")

    asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def test_no_statement_of_the_server_updates_or_deletes_an_audit_row() -> None:
    root = Path(__file__).resolve().parents[2] / "server"
    changing = re.compile(r"\b(UPDATE\s+audit|DELETE\s+FROM\s+audit|TRUNCATE\s+audit)\b", re.I)
    found = [
        f"{path.relative_to(root)}: {m.group(0)}"
        for path in sorted(root.rglob("*.py"))
        if "migrations" not in path.parts
        for m in changing.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []
    # The check can fail.
    assert changing.search('db.execute("DELETE FROM audit WHERE seq < ?", (9,))')
