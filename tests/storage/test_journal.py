"""The journal behaves alike behind its one interface, in a file beside an SQLite
database and in PostgreSQL's tables (the ``database`` fixture runs each test on both):
typed inputs go in and come back, in order, after a restart; a forgotten match is
gone; a resumed match's inputs go on from where they stopped; and the web page's
reads of a stored match answer the same row type on both."""

from __future__ import annotations

import asyncio

from server.db.matches import Storage, stored_match
from server.inputs import Abort, Join, Start, Tick
from server.status import MatchStatus

HOST = "host-1"


def test_typed_inputs_come_back_in_order_after_a_restart(database: str) -> None:
    async def write() -> None:
        storage = Storage(database, host_id=HOST)
        journal = storage.open_journal()
        journal.begin("m-1", {"players": 2})
        journal.begin("m-2", {"players": 3})
        await journal.append("m-1", Join(0, "ada", "c0ffee"))
        await journal.append("m-2", Abort("organiser"))
        await journal.append("m-1", Start(1.5))
        journal.forget("m-2")
        await storage.writer.flush()
        journal.close()
        storage.close()

    async def resume_and_go_on() -> None:
        storage = Storage(database, host_id=HOST)
        journal = storage.open_journal()
        [held] = journal.unfinished()
        assert held.match_id == "m-1" and held.setup == {"players": 2}
        assert held.inputs == (Join(0, "ada", "c0ffee"), Start(1.5))
        await journal.append("m-1", Tick(3.0, (1,)))
        await storage.writer.flush()
        journal.close()
        storage.close()

    asyncio.run(write())
    asyncio.run(resume_and_go_on())
    storage = Storage(database, host_id=HOST)
    journal = storage.open_journal()
    [held] = journal.unfinished()
    assert held.inputs == (Join(0, "ada", "c0ffee"), Start(1.5), Tick(3.0, (1,)))
    journal.close()
    storage.close()


def test_a_stored_match_reads_back_with_its_record(database: str) -> None:
    storage = Storage(database, host_id=HOST)
    storage.add_match("m-9", 2, ("a", "b"), True, "2026-01-01T00:00:00.000+00:00")
    asyncio.run(storage.writer.flush())
    assert stored_match(storage.db, "m-9") == storage.match("m-9")
    ended = asyncio.run(
        storage.end_match(
            "m-9",
            MatchStatus.FINISHED,
            '{"record": 1}',
            players=2,
            names=("a", "b"),
            ladder=True,
            created="2026-01-01T00:00:00.000+00:00",
            winners=(1,),
        )
    )
    assert ended
    row = stored_match(storage.db, "m-9")
    assert row is not None and row.status is MatchStatus.FINISHED and row.status.ended
    assert (row.record, row.winners, row.ladder) == ('{"record": 1}', (1,), True)
    assert stored_match(storage.db, "m-0") is None
    storage.close()
