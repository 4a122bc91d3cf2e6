"""Ended matches and the tokens of retired ones are held in bounded number, so a
server's memory reaches a plateau however many matches end; within the bounds they
are held for their time (an injected clock moves it)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path

from server.db.matches import Storage
from server.runner import Runner
from server.runners import Runners

from .clocks import ManualClock


async def _play_out(runner: Runner) -> None:
    runner.join(0)
    runner.join(1)
    while (d := runner.match.decision) is not None:
        runner.answer(d.seat, d.id, 0, None)
    await asyncio.wait_for(runner.result(), 30)
    await asyncio.sleep(0)  # the end-of-match callback of Runners


def test_ended_matches_and_retired_tokens_are_bounded_in_count(tmp_path: Path) -> None:
    async def go() -> None:
        storage = Storage(tmp_path / "arena.db")
        clock = ManualClock()
        try:
            runners = Runners(storage, clock=clock, max_ended=3, max_retired=4)
            matches = [runners.create_match(2, seed=n) for n in range(6)]
            for match in matches:
                await _play_out(match)
            # The three latest are held; the oldest were forgotten first.
            assert [m.id for m in matches if runners.get(m.id)] == [m.id for m in matches[3:]]
            assert runners.seat_of(matches[5].tokens[0]) == (matches[5], 0)
            # Six tokens retired, four kept: those of matches 1 and 2, not of match 0.
            known = [runners.retired(t) for m in matches[:3] for t in m.tokens]
            assert known == [None, None, matches[1].id, matches[1].id, matches[2].id, matches[2].id]
            # Time still forgets the rest: keep_ended, then keep_retired.
            clock.advance(runners.keep_ended)
            assert not runners.matches
            assert runners.retired(matches[5].tokens[1]) == matches[5].id
            clock.advance(runners.keep_retired)
            assert all(runners.retired(t) is None for m in matches for t in m.tokens)
        finally:
            storage.close()

    asyncio.run(go())


def test_retired_tokens_are_forgotten_in_time_without_a_timer_each(tmp_path: Path) -> None:
    async def go() -> None:
        storage = Storage(tmp_path / "arena.db")
        clock = ManualClock()
        try:
            runners = Runners(storage, clock=clock, max_ended=1)
            first = runners.create_match(2, seed=1)
            await _play_out(first)
            clock.advance(runners.keep_ended)  # first forgotten: its tokens retired
            pending = clock.pending()
            later = runners.create_match(2, seed=2)
            await _play_out(later)
            clock.advance(runners.keep_ended)
            # Retiring the later match's tokens left no timer behind (a busy server
            # retires thousands of tokens a minute, for ten minutes each).
            assert clock.pending() <= pending
            assert runners.retired(first.tokens[0]) == first.id
            clock.advance(runners.keep_retired - runners.keep_ended)
            assert runners.retired(first.tokens[0]) is None  # its time is up
            assert runners.retired(later.tokens[1]) == later.id  # not yet
            clock.advance(runners.keep_ended)
            assert runners.retired(later.tokens[1]) is None
            # The next match retired sweeps the expired ones out of memory.
            await _play_out(runners.create_match(2, seed=3))
            await _play_out(runners.create_match(2, seed=4))
            assert len(runners._retired) == 2
        finally:
            storage.close()

    asyncio.run(go())


def test_a_forgotten_match_is_not_kept_alive_by_its_timers(tmp_path: Path) -> None:
    # The count bound forgets the oldest ended match long before its keep_ended timer
    # comes due: nothing may hold it (its state, its log) until then.
    async def go() -> None:
        storage = Storage(tmp_path / "arena.db")
        clock = ManualClock()
        try:
            runners = Runners(storage, clock=clock, max_ended=1)
            first = runners.create_match(2, seed=1)
            await _play_out(first)
            await _play_out(runners.create_match(2, seed=2))
            assert runners.get(first.id) is None and runners.retired(first.tokens[0]) == first.id
            held = weakref.ref(first)
            tokens = first.tokens
            del first
            gc.collect()
            assert held() is None
            clock.advance(runners.keep_ended + runners.keep_retired)
            assert runners.retired(tokens[0]) is None
        finally:
            storage.close()

    asyncio.run(go())
