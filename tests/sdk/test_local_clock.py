"""Local play on the server's clock: late decisions are replaced and counted, and a
late bot is never called again before its late call returns. No test sleeps: the
clock is injected, or the bot blocks on an Event the test releases."""

from __future__ import annotations

import threading
from typing import Any

from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from client_sdk import View, fallback, play_local


class FakeClock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_answer_past_the_deadline_is_replaced_and_counted_late() -> None:
    clock = FakeClock()

    class Slow(GreedyBot):
        """Thinks six seconds (by the clock) over every third decision."""

        name = "slow"
        calls = 0
        slow_calls = 0

        def turn(self, view: View) -> Any:
            Slow.calls += 1
            if Slow.calls % 3 == 0:
                Slow.slow_calls += 1
                clock.now += 6.0
            return super().turn(view)

    result = play_local([Slow(), RandomBot()], seed=4, deadline_ms=5000, clock=clock)
    assert result.record.replay().is_over
    assert Slow.slow_calls >= 2
    assert result.late == (Slow.slow_calls, 0)
    assert result.replaced == result.late
    # The same game without a deadline counts nothing late.
    Slow.calls = Slow.slow_calls = 0
    free = play_local([Slow(), RandomBot()], seed=4, clock=clock)
    assert free.late == (0, 0) and free.replaced == (0, 0)


def test_a_late_bot_is_not_called_again_until_its_late_call_returns() -> None:
    release = threading.Event()
    returned = threading.Event()
    lock = threading.Lock()

    class Stuck(GreedyBot):
        """Blocks on its first decision until the opponent releases it."""

        name = "stuck"
        calls = 0
        inside = 0
        most_inside = 0
        calls_while_stuck = 0

        def turn(self, view: View) -> Any:
            with lock:
                Stuck.calls += 1
                Stuck.inside += 1
                Stuck.most_inside = max(Stuck.most_inside, Stuck.inside)
                first = Stuck.calls == 1
                if not first and not returned.is_set():
                    Stuck.calls_while_stuck += 1
            try:
                if first:
                    assert release.wait(30)
                return super().turn(view)
            finally:
                with lock:
                    Stuck.inside -= 1
                if first:
                    returned.set()

    class Releaser(RandomBot):
        """Releases the stuck bot on its fourth turn, and waits until it has returned."""

        name = "releaser"
        turns = 0

        def turn(self, view: View) -> Any:
            Releaser.turns += 1
            if Releaser.turns == 4:
                release.set()
                assert returned.wait(30)
            return super().turn(view)

    seen: list[Any] = []

    class Watching(Stuck):
        def turn(self, view: View) -> Any:
            seen.append(fallback(view))
            return super().turn(view)

    result = play_local([Watching(), Releaser()], seed=3, deadline_ms=300)
    assert result.record.replay().is_over
    assert Stuck.most_inside == 1 and Stuck.calls_while_stuck == 0
    # Late: the first call, and every decision asked while it still ran (>= 3 turns).
    assert result.late[0] >= 4
    assert result.replaced == result.late
    assert Stuck.calls > 1  # called again once the late call returned


def test_without_a_deadline_the_bot_is_called_on_the_callers_thread() -> None:
    threads: set[str] = set()

    class Where(GreedyBot):
        def turn(self, view: View) -> Any:
            threads.add(threading.current_thread().name)
            return super().turn(view)

    play_local([Where(), RandomBot()], seed=1)
    assert threads == {threading.current_thread().name}
    threads.clear()
    play_local([Where(), RandomBot()], seed=1, deadline_ms=5000)
    assert threads and threading.current_thread().name not in threads


def test_each_answer_is_reported_to_the_bot_with_the_time_it_took_by_the_clock() -> None:
    # The time from the decision's arrival to the answer, by the game's clock: what
    # a bot keeps its margin by (bots.search).
    clock = FakeClock()

    class Timed(GreedyBot):
        """Thinks 0.25 s (by the clock) over every turn; keeps what it is told."""

        name = "timed"

        def __init__(self) -> None:
            self.told: list[float] = []
            self.decisions = 0

        def turn(self, view: View) -> Any:
            self.decisions += 1
            clock.now += 0.25
            return super().turn(view)

        def on_answered(self, seconds: float) -> None:
            self.told.append(seconds)

    bot = Timed()
    result = play_local([bot, RandomBot()], seed=4, deadline_ms=5000, clock=clock)
    assert result.late == (0, 0)
    # Every answer is reported: each turn's 0.25 s, each resolution's nothing.
    assert bot.decisions > 0 and bot.told.count(0.25) == bot.decisions
    assert set(bot.told) <= {0.0, 0.25}
