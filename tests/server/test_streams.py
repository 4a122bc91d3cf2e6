"""The streams of a match (``server.streams``): what one stream is sent, in what order
and when, through the loop every stream uses, on a clock the test moves by hand."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from server.db.matches import Storage
from server.runners import Runners
from server.streams import Batch, Follower, Replies, holding
from server.visibility import FinalView, Item, Snapshot

from .clocks import ManualClock


def _items(batch: Batch, now: float) -> Sequence[Item | bytes]:
    """Renders a batch as itself, to look at what a stream sends."""
    return list(batch)


def test_a_reply_goes_ahead_of_what_its_answer_caused(tmp_path: Path) -> None:
    """An accepted answer's reply waits the stream's hold and then goes first, before
    the entries the answer caused; a refusal's goes at once; a stopped stream ends."""

    async def go() -> None:
        clock = ManualClock()
        storage = Storage(tmp_path / "arena.db")
        try:
            runners = Runners(storage, clock=clock, journal=False)
            runner = runners.create_match(2, seed=3, deadline_ms=60_000)
            runner.join(0)
            runner.join(1)
            d = runner.match.decision
            assert d is not None
            seat, hold = d.seat, holding(1000)
            follower = Follower(seat, hold, Replies(8))
            stream = runner.streams.stream(follower, 0, _items)
            (snapshot,) = await anext(stream)
            assert isinstance(snapshot, Snapshot) and snapshot.decision is d
            # An answer that hands the turn on asks nothing of the seat now: its reply
            # is held with the events it caused.
            while True:
                d = runner.match.decision
                assert d is not None and d.seat == seat
                position = len(runner.match.log)
                ruling = runner.answer(d.seat, d.id, 0, None)
                assert ruling.accepted
                runner.streams.reply(follower, position, b"accepted", ruling.accepted)
                asked = runner.match.decision
                if asked is not None and asked.seat != seat:
                    break
                await anext(stream)  # its own next request: sent at once
            assert not follower.wake.is_set()
            clock.advance(hold - 0.01)
            assert not follower.wake.is_set()
            clock.advance(0.01)
            assert follower.wake.is_set()
            sent = await anext(stream)
            assert sent[0] == b"accepted" and len(sent) > 1
            assert not any(isinstance(item, bytes) for item in sent[1:])
            # A refusal is sent at once, alone: nothing happened in the match.
            ruling = runner.answer(seat, "no-such-decision", 0, None)
            assert not ruling.accepted
            runner.streams.reply(follower, len(runner.match.log), b"refused", ruling.accepted)
            assert follower.wake.is_set()
            assert await anext(stream) == [b"refused"]
            # Stopped, the stream ends when next woken, and is followed no more.
            follower.stop()
            with pytest.raises(StopAsyncIteration):
                await anext(stream)
            assert follower not in runner.streams.followers
            runner.abort("the test is over")
            await asyncio.wait_for(runner.result(), 30)
        finally:
            storage.close()

    asyncio.run(go())


def test_a_stream_ends_with_the_end_of_its_match(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        storage = Storage(tmp_path / "arena.db")
        try:
            runners = Runners(storage, clock=clock, journal=False)
            runner = runners.create_match(2, seed=5, deadline_ms=60_000)
            watching = runner.streams.stream(Follower(None), 0, _items)
            (snapshot,) = await anext(watching)
            assert isinstance(snapshot, Snapshot) and snapshot.decision is None
            runner.abort("the test is over")
            await asyncio.wait_for(runner.result(), 30)
            sent = await anext(watching)
            assert isinstance(sent[-1], FinalView)
            with pytest.raises(StopAsyncIteration):
                await anext(watching)
            assert not runner.streams.followers
            # A stream opened on an ended match gets its snapshot and its end at once.
            late = [batch async for batch in runner.streams.stream(Follower(1), 0, _items)]
            assert len(late) == 1
            assert isinstance(late[0][0], Snapshot) and isinstance(late[0][1], FinalView)
        finally:
            storage.close()

    asyncio.run(go())
