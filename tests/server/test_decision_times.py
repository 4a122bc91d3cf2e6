"""A DecisionRequest's times come from one instant: ``default_in_ms`` is exactly
``deadline_ms + time_bank_ms``, and the absolute ``deadline`` and ``default_at`` agree
with them, however the seat's time bank was spent (by fractions of a millisecond) and
whenever the request is sent. On a clock the test moves by hand."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from mammamia import new_game
from mammamia_pb import arena_pb2 as pb
from server import wire
from server.db.matches import Storage
from server.match import Match, Settings
from server.runners import Runners
from server.streams import Follower, encoded

from .clocks import START, ManualClock


def _requests(message: bytes) -> list[pb.DecisionRequest]:
    """Returns the decision requests in one SeatEvents message (its snapshot's too)."""
    found = []
    for event in pb.SeatEvents.FromString(message).events:
        if event.HasField("decision"):
            found.append(event.decision)
        elif event.HasField("snapshot") and event.snapshot.HasField("decision"):
            found.append(event.snapshot.decision)
    return found


def _check(request: pb.DecisionRequest, now: float) -> None:
    """Checks that ``request``, sent at ``now``, keeps the contract's sum exactly and
    that its absolute times agree with its relative ones."""
    assert request.default_in_ms == request.deadline_ms + request.time_bank_ms, request
    now_ns = round(now * 1e9)
    deadline_ns = request.deadline.ToNanoseconds()
    default_ns = request.default_at.ToNanoseconds()
    # Each relative time is its absolute one's distance from now, in whole ms, rounded down.
    if deadline_ns > now_ns:
        assert request.deadline_ms == (deadline_ns - now_ns + 500) // 1000 // 1000
    else:
        assert request.deadline_ms == 0
    bank_ns = default_ns - max(deadline_ns, now_ns)
    assert request.time_bank_ms == max(0, (bank_ns + 500) // 1000 // 1000)
    # The sum falls short of default_at by less than two ms (two roundings), never over.
    to_default = default_ns - now_ns
    assert request.default_in_ms * 1_000_000 <= to_default + 1000
    assert to_default < (request.default_in_ms + 2) * 1_000_000


def test_a_partly_spent_bank_keeps_the_sum_exact() -> None:
    """The case seen from outside: 596.5 ms left in the bank, the request sent 0.5 ms
    after it was asked, read 299 + 596 against 896. Now: 299 + 596 = 895."""
    match = Match("m-test", new_game(2, 7), 7, Settings(deadline_ms=300, time_bank_ms=1000), START)
    match.join(0)
    match.join(1)
    match.start(START)
    d = match.decision
    assert d is not None
    seat = d.seat
    # 403.5 ms past the deadline: accepted, and charged to the bank.
    assert match.answer(seat, d.id, 0, None, d.deadline + 0.4035).accepted
    while (d := match.decision) is not None and d.seat != seat:
        assert match.answer(d.seat, d.id, 0, None, d.asked).accepted
    assert d is not None
    now = d.asked + 0.0005
    request = pb.DecisionRequest.FromString(wire.decision_bytes(d, match, now))
    assert (request.deadline_ms, request.time_bank_ms, request.default_in_ms) == (299, 596, 895)
    _check(request, now)
    # Sent right as it was asked: 300 ms, not 299 (the clock's float noise is not time).
    at_once = pb.DecisionRequest.FromString(wire.decision_bytes(d, match, d.asked))
    assert (at_once.deadline_ms, at_once.time_bank_ms) == (300, 596)


def test_the_sum_holds_over_many_fractional_spends() -> None:
    """Many matches, a seat answering late by random fractions of a millisecond, each
    request looked at from random instants before and after its deadline."""
    rng = random.Random(29)
    checked = 0
    for seed in range(40):
        players = 2 + seed % 4
        match = Match(
            "m-test",
            new_game(players, seed),
            seed,
            Settings(deadline_ms=300, time_bank_ms=rng.choice((1000, 2500, 60_000))),
            START + rng.random() * 1000,
        )
        for seat in range(players):
            match.join(seat)
        match.start(match.created)
        while (d := match.decision) is not None:
            for _ in range(3):
                now = d.asked + rng.uniform(0.0, 0.3 + match.time_bank[d.seat])
                _check(pb.DecisionRequest.FromString(wire.decision_bytes(d, match, now)), now)
                checked += 1
            late = rng.choice((0.0, 0.0004, rng.uniform(0.0, 0.02)))
            assert match.answer(d.seat, d.id, 0, None, d.deadline + late).accepted
    assert checked > 3000


def test_every_request_of_a_real_match_keeps_the_sum(tmp_path: Path) -> None:
    """A match run by its runner: seat 0 answers 300.4 ms into each 300 ms deadline
    (and once 403.5 ms late), each of its requests is read through the stream loop a
    fraction of a millisecond after it is asked, and a seat that comes back reads its
    open decision from a snapshot; every DecisionRequest keeps the sum exactly."""

    async def go() -> None:
        clock = ManualClock()
        storage = Storage(tmp_path / "arena.db")
        try:
            runners = Runners(storage, clock=clock, journal=False, start_timeout=30.0)
            runner = runners.create_match(2, seed=3, deadline_ms=300, time_bank_ms=1000)
            match = runner.match
            render = encoded(match)
            streams = {seat: runner.streams.stream(Follower(seat), 0, render) for seat in range(2)}
            for seat in range(2):
                await anext(streams[seat])  # the snapshot of the waiting match
            runner.join(0)
            runner.join(1)
            seen: list[pb.DecisionRequest] = []
            answered = 0
            while (d := match.decision) is not None:
                # Sent a fraction of a millisecond after it is asked.
                clock.advance(0.0005)
                requests = [r for r in _requests(await anext(streams[d.seat])) if r]
                asked = [r for r in requests if r.decision_id == d.id]
                assert asked, requests
                for r in asked:
                    _check(r, clock.now())
                seen.extend(asked)
                if d.seat == 0:
                    if answered == 1:
                        # After 403.5 ms spent: the case seen from outside.
                        assert (asked[-1].deadline_ms, asked[-1].time_bank_ms) == (299, 596)
                        assert asked[-1].default_in_ms == 895
                    # A reconnecting stream reads the open decision from its snapshot.
                    clock.advance(0.1003)
                    again = runner.streams.stream(Follower(0), 0, render)
                    (request,) = _requests(await anext(again))
                    _check(request, clock.now())
                    seen.append(request)
                    await again.aclose()
                    late = 0.4035 if answered == 0 else 0.0004
                    clock.advance(d.deadline + late - clock.now())
                    answered += 1
                assert runner.answer(d.seat, d.id, 0, None).accepted
            assert answered > 10 and len(seen) > 2 * answered
            assert any(r.time_bank_ms % 1000 for r in seen)  # a partly spent bank
            result = await asyncio.wait_for(runner.result(), 30)
            assert result.ranks
        finally:
            for stream in streams.values():
                await stream.aclose()
            storage.close()

    asyncio.run(go())
