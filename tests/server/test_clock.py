"""Deadlines, strikes, autopilot, time banks and the streams' hold, on a clock the test
moves by hand: the match is handed the time, and the runner's timers run when the
manual clock reaches them. Nothing here sleeps."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mammamia import Resolve, loads, new_game
from mammamia_pb import arena_pb2 as pb
from server import visibility, wire
from server.answers import Refusal
from server.db.matches import Storage
from server.events import Asked, Defaulted, Ended, Happened
from server.match import Match, Settings
from server.runners import Runners
from server.status import MatchStatus
from server.streams import HOLD_SECONDS, MAX_HOLD_SECONDS, holding

from .clocks import START, ManualClock


def _match(
    players: int = 2, seed: int = 11, deadline_ms: int = 1000, time_bank_ms: int = 0
) -> Match:
    match = Match(
        "m-test",
        new_game(players, seed),
        seed,
        Settings(deadline_ms=deadline_ms, time_bank_ms=time_bank_ms),
        START,
    )
    for seat in range(players):
        match.join(seat)
    match.start(START)
    return match


def test_a_silent_seat_is_defaulted_struck_then_played_by_autopilot() -> None:
    match = _match()
    now = START
    answered = 0
    while match.decision is not None:
        d = match.decision
        if d.seat == 0:
            assert match.answer(0, d.id, 0, None, now).accepted
            answered += 1
            continue
        # Seat 1 never answers: nothing happens until the default time, then the default.
        assert match.default_at(d) == d.deadline == d.asked + 1.0
        match.tick(d.deadline - 0.001, absent=())
        assert match.decision is d
        now = d.deadline
        match.tick(now, absent=() if match.strikes[1] < 2 else (1,))
        assert match.decision is not d
        defaulted = [e for e in match.log if isinstance(e, Defaulted)][-1]
        assert (defaulted.seat, defaulted.decision_id) == (1, d.id)
        expected = Resolve(False) if d.resolve else d.options[0]
        assert defaulted.action == expected
    # Three defaults in a row, then the default policy played seat 1 without asking.
    defaults = [e for e in match.log if isinstance(e, Defaulted)]
    assert [(e.strikes, e.autopilot) for e in defaults] == [(1, False), (2, False), (3, True)]
    assert [e.reason for e in defaults] == ["late", "late", "disconnected"]
    asked_of_1 = [e for e in match.log if isinstance(e, Asked) and e.decision.seat == 1]
    assert len(asked_of_1) == 3
    assert match.state.is_over and answered > 3
    # Numbered entries: their place in the log, the same for every viewer.
    assert [e.sequence for e in match.numbered] == list(range(1, len(match.numbered) + 1))
    meta = loads(match.record(now)).meta
    assert [t["reason"] for t in meta["timeouts"]] == ["deadline", "deadline", "disconnected"]
    assert meta["strikes"] == [0, 3]
    assert meta["autopilot"][0]["from_action"] == meta["timeouts"][-1]["action"]
    # A late answer to a defaulted decision is refused as such.
    late = match.answer(1, defaults[0].decision_id, 0, None, now)
    assert late.refusal is Refusal.DEFAULTED and late.message.startswith("REFUSAL_DEFAULTED")


def test_an_answer_clears_the_strikes() -> None:
    match = _match()
    d = match.decision
    assert d is not None
    seat = d.seat
    match.tick(match.default_at(d))
    assert match.strikes[seat] == 1
    while (d := match.decision) is not None and d.seat != seat:
        assert match.answer(d.seat, d.id, 0, None, d.asked).accepted
    assert d is not None
    assert match.answer(seat, d.id, 0, None, d.asked).accepted
    assert match.strikes[seat] == 0 and match.strikes_total[seat] == 1


def test_the_time_bank_runs_after_the_deadline_and_is_charged() -> None:
    match = _match(deadline_ms=1000, time_bank_ms=2000)
    d = match.decision
    assert d is not None
    assert match.default_at(d) == d.deadline + 2.0
    seat = d.seat
    match.tick(d.deadline + 1.999)
    assert match.decision is d  # the bank still runs
    # Answered 1.5 s after the deadline: accepted, and 1.5 s charged to the bank.
    assert match.answer(seat, d.id, 0, None, d.deadline + 1.5).accepted
    assert match.time_bank[seat] == 0.5
    while match.decision is not None and match.decision.seat != seat:
        other = match.decision
        match.answer(other.seat, other.id, 0, None, other.asked)
    d = match.decision
    assert d is not None
    assert match.default_at(d) == d.deadline + 0.5
    # On the wire: the deadline, the bank left and when the default applies.
    now = d.deadline + 0.25
    request = pb.DecisionRequest.FromString(wire.decision_bytes(d, match, now))
    assert request.deadline_ms == 0 and request.time_bank_ms == 250
    assert request.default_in_ms == 250
    assert request.default_at.ToNanoseconds() == round((d.deadline + 0.5) * 1e9)
    match.tick(d.deadline + 0.5)
    assert match.decision is not d and match.time_bank[seat] == 0.0


def test_a_request_counts_its_times_from_when_it_is_sent() -> None:
    match = _match(deadline_ms=5000, time_bank_ms=1000)
    d = match.decision
    assert d is not None
    request = pb.DecisionRequest.FromString(wire.decision_bytes(d, match, d.asked + 1.0))
    assert (request.deadline_ms, request.time_bank_ms, request.default_in_ms) == (4000, 1000, 5000)
    assert request.deadline.ToNanoseconds() == round((START + 5.0) * 1e9)


def test_the_runner_applies_deadlines_and_holds_events_on_the_injected_clock(
    tmp_path: Path,
) -> None:
    async def go() -> None:
        clock = ManualClock()
        storage = Storage(tmp_path / "arena.db")
        try:
            runners = Runners(storage, clock=clock, start_timeout=30.0)
            runner = runners.create_match(2, seed=3, deadline_ms=1000)
            followers = [
                runner.streams.follow(0),
                runner.streams.follow(1),
                runner.streams.follow(None),
            ]
            runner.join(0)
            runner.join(1)  # all in: the match starts
            await runner.committed()  # shown once the start is written ahead
            d = runner.match.decision
            assert d is not None
            asker = followers[d.seat]
            others = [f for f in followers if f is not asker]
            # The seat asked is woken at once; the others get the round's start at most
            # HOLD_SECONDS later, to travel with what follows.
            assert asker.wake.is_set()
            assert not any(f.wake.is_set() for f in others)
            clock.advance(HOLD_SECONDS * 0.9)
            assert not any(f.wake.is_set() for f in others)
            clock.advance(HOLD_SECONDS * 0.1)
            assert all(f.wake.is_set() for f in others)
            # The deadline comes with the clock, not with the machine's speed.
            clock.advance(1.0 - HOLD_SECONDS - 0.001)
            assert runner.match.decision is d
            clock.advance(0.001)
            assert runner.match.decision is not d
            assert any(isinstance(e, Defaulted) for e in runner.match.log)
            # Nobody answers: six defaults, both seats on autopilot, the match ends.
            for _ in range(10):
                clock.advance(1.0)
            result = await asyncio.wait_for(runner.result(), 30)
            assert result.status == MatchStatus.FINISHED
            assert isinstance(runner.match.log[-1], Ended)
            assert sorted(runner.match.autopilot) == [0, 1]
            # Every viewer sees the same numbered entries; only its own requests.
            seen = [
                [visibility.item(runner.match, e, f.viewer) for e in runner.match.log]
                for f in followers
            ]
            numbered = [[i for i in s if isinstance(i, Happened | Defaulted)] for s in seen]
            assert numbered[0] == numbered[1] == numbered[2]
            assert all(i is None or not isinstance(i, Asked) for s in seen for i in s)
        finally:
            storage.close()

    asyncio.run(go())


def test_each_follower_is_held_for_its_own_hold_from_when_it_was_first_held(tmp_path: Path) -> None:
    """Two followers with one hold, held 0.6 s apart: the first is woken when its hold
    is over, the second only when its own is (not with the first), and a follower
    held again before it is woken keeps the time its hold began."""

    async def go() -> None:
        clock = ManualClock()
        storage = Storage(tmp_path / "arena.db")
        try:
            runners = Runners(storage, clock=clock, start_timeout=30.0)
            runner = runners.create_match(2, seed=5, deadline_ms=60_000)
            hold = holding(1000)
            first, second = runner.streams.follow(0, hold), runner.streams.follow(1, hold)
            runner.streams.hold(first)
            clock.advance(0.6)
            runner.streams.hold(second)
            runner.streams.hold(first)  # again: its hold still ends at 1.0 s
            clock.advance(0.4)
            assert first.wake.is_set() and not second.wake.is_set()
            clock.advance(0.5)
            assert not second.wake.is_set()
            clock.advance(0.1)
            assert second.wake.is_set()
            # Woken, a follower held again waits a whole hold from then.
            first.wake.clear()
            runner.streams.hold(first)
            clock.advance(hold - 0.01)
            assert not first.wake.is_set()
            clock.advance(0.01)
            assert first.wake.is_set()
            runner.abort("the test is over")
            await asyncio.wait_for(runner.result(), 30)
        finally:
            storage.close()

    asyncio.run(go())


def test_a_follower_that_asks_for_a_longer_hold_is_woken_later(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        storage = Storage(tmp_path / "arena.db")
        try:
            runners = Runners(storage, clock=clock, start_timeout=30.0)
            runner = runners.create_match(3, seed=5, deadline_ms=5000)
            long = holding(1000)
            assert (holding(0), holding(10**9)) == (HOLD_SECONDS, MAX_HOLD_SECONDS)
            waiting = {
                seat: runner.streams.follow(seat, long if seat else HOLD_SECONDS)
                for seat in range(3)
            }
            for seat in range(3):
                runner.join(seat)
            await runner.committed()
            d = runner.match.decision
            assert d is not None
            others = [s for s in waiting if s != d.seat]
            short = [waiting[s] for s in others if waiting[s].hold == HOLD_SECONDS]
            held = [waiting[s] for s in others if waiting[s].hold == long]
            assert held and not any(f.wake.is_set() for f in (*short, *held))
            clock.advance(HOLD_SECONDS)
            assert all(f.wake.is_set() for f in short)
            assert not any(f.wake.is_set() for f in held)
            clock.advance(long - HOLD_SECONDS)
            assert all(f.wake.is_set() for f in held)
            # A decision for a held seat wakes it at once, its hold left behind.
            for f in waiting.values():
                f.wake.clear()
            runner.answer(d.seat, d.id, 0, None)
            await runner.committed()
            asked = runner.match.decision
            assert asked is not None and waiting[asked.seat].wake.is_set()
            runner.abort("the test is over")
            await asyncio.wait_for(runner.result(), 30)
        finally:
            storage.close()

    asyncio.run(go())
