"""A match's end is announced as it is stored: when the stored row had already ended
(another server on the same file marked it aborted), the match is not announced as
finished."""

from __future__ import annotations

import asyncio
from pathlib import Path

from server.db.matches import Storage
from server.runners import Runners

from .clocks import ManualClock


def test_an_end_the_database_did_not_take_is_not_announced_finished(tmp_path: Path) -> None:
    async def go() -> tuple[str, str | None]:
        storage = Storage(tmp_path / "arena.db")
        try:
            runners = Runners(storage, clock=ManualClock())
            runner = runners.create_match(2, seed=9)
            runner.join(0)
            runner.join(1)
            await storage.writer.flush()
            # Another process on the same file marks the running match aborted.
            other = Storage(tmp_path / "arena.db")
            assert other.abort_unfinished("another server started") == [runner.id]
            other.close()
            while (d := runner.match.decision) is not None:
                runner.answer(d.seat, d.id, 0, None)
            result = await asyncio.wait_for(runner.result(), 30)
            row = storage.match(runner.id)
            assert row is not None
            return result.status, row.status
        finally:
            storage.close()

    announced, stored = asyncio.run(go())
    assert (announced, stored) == ("aborted", "aborted")
