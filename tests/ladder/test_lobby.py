"""The one registry of entries both lobbies use: one stream per bot, each told a
match's seat once."""

from __future__ import annotations

import asyncio

import pytest

from server.ladder.lobby import Assignment, Entries, ReplacedError, new_stream


def test_a_bot_has_one_stream_told_each_seat_once() -> None:
    async def scenario() -> None:
        entries = Entries()
        left: list[str] = []
        first_id, second_id = new_stream(), new_stream()
        first = entries.open("ada", first_id, lambda: left.append(first_id))
        seat = Assignment("m1", "token", 0, 2)
        entries.tell("ada", seat)
        entries.tell("ada", seat)  # the same match again: not sent twice
        assert await anext(first) == seat
        # A newer stream replaces the older one, and is told the seat again.
        second = entries.open("ada", second_id, lambda: left.append(second_id))
        with pytest.raises(ReplacedError):
            await anext(first)
        assert entries.stream_of("ada") == second_id and "ada" in entries
        entries.tell("ada", seat)
        assert await anext(second) == seat
        # Closing the replaced stream changes nothing; closing the current one does.
        assert not entries.close("ada", first_id)
        first.close()
        first.close()  # once only
        assert left == [first_id]
        entries.tell("bob", seat)  # no stream: nothing to tell
        entries.end()
        with pytest.raises(StopAsyncIteration):
            await anext(second)
        assert entries.close("ada", second_id) and "ada" not in entries

    asyncio.run(asyncio.wait_for(scenario(), timeout=10))
