"""Local play: the same Bot classes play whole games in-process and leave a record."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from bots.counter import CounterBot
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from client_sdk import Bot, Resolve, Turn, View, play_local
from mammamia import loads, view_of

from .support import Recording


class Raiser(Bot):
    """Raises on every decision."""

    name = "raiser"

    def turn(self, view: View) -> Turn:
        raise RuntimeError("boom")

    def resolve(self, view: View) -> Resolve:
        raise RuntimeError("boom")


class Cheater(Bot):
    """Answers with things the rules never allow."""

    name = "cheater"

    def turn(self, view: View) -> Turn:
        return Turn.play("salami", 99, draw="supply")

    def resolve(self, view: View) -> Resolve:
        return Resolve(True, "olive", (9, 9, 9, 9, 9))


class Confused(Bot):
    """Answers with a value that is not an action at all."""

    name = "confused"

    def turn(self, view: View) -> Turn:
        return "salami please"  # type: ignore[return-value]


class LastTurn(Bot):
    """Takes the last turn offered; resolves as the SDK does by default."""

    name = "watcher"

    def turn(self, view: View) -> Turn:
        choice = view.legal[-1]
        assert isinstance(choice, Turn)
        return choice


def test_the_same_seed_plays_the_same_game() -> None:
    one = play_local([RandomBot(), GreedyBot(), CounterBot()], seed=11)
    two = play_local([RandomBot(), GreedyBot(), CounterBot()], seed=11)
    other = play_local([RandomBot(), GreedyBot(), CounterBot()], seed=12)
    assert one.record.dumps() == two.record.dumps()
    assert one.record.dumps() != other.record.dumps()


def test_the_record_replays_to_the_reported_result() -> None:
    result = play_local([GreedyBot, RandomBot, CounterBot, RandomBot], seed=5)
    state = loads(result.record.dumps()).replay()
    assert state.is_over
    assert tuple(state.winners()) == result.winners
    assert tuple(state.ranking()) == result.ranks
    assert tuple(len(d) for d in state.delivered) == result.delivered
    assert result.record.meta["names"] == ["greedy", "random", "counter", "random"]


def test_a_bot_sees_exactly_its_own_view_and_its_hooks_run() -> None:
    watcher = Recording(LastTurn())
    result = play_local([watcher, RandomBot()], seed=3)
    assert watcher.started is not None and watcher.started.round == 1
    assert watcher.ended is not None and watcher.ended.phase == "over"
    assert watcher.ended.winners == result.winners
    # Every view the bot got is the one the rules give its seat at that moment.
    states = loads(result.record.dumps()).states()
    asked = [view_of(s, 0) for s in states if s.to_act == 0]
    assert watcher.views == asked
    assert any(v.phase == "resolve" for v in asked)


@pytest.mark.parametrize("bad", [Raiser, Cheater, Confused])
def test_a_misbehaving_bot_is_answered_for_and_the_game_finishes(bad: type[Bot]) -> None:
    with capture_logs() as logs:
        result = play_local([bad(), GreedyBot()], seed=9)
    assert result.record.replay().is_over
    replaced = [e for e in logs if e["event"] == "bot_decision_replaced"]
    # Each distinct fault is logged once (here one per kind of decision), then counted.
    assert 1 <= len(replaced) <= 2 < result.replaced[0] and result.replaced[1] == 0
    assert len(result.faults) == len(replaced) and result.late == (0, 0)
    first = replaced[0]
    assert first["bot"] == bad.name and first["decision"].startswith("local-")
    assert first["kind"] in ("turn", "resolve") and first["fault"]
    # It says where: the line that raised, or the method that answered wrongly.
    assert first["where"].startswith(__file__)
    if bad is Raiser:
        assert "raise RuntimeError" in first["traceback"]


def test_fewer_bots_than_seats_cycle_and_classes_give_one_bot_per_seat() -> None:
    result = play_local([CounterBot, RandomBot], seed=2, players=5)
    assert result.names == ("counter", "random", "counter", "random", "counter")
    with pytest.raises(ValueError, match="already sits at seat 0"):
        play_local([CounterBot()], seed=2, players=2)


def test_a_bot_without_turn_says_what_is_missing() -> None:
    class Lazy(Bot):
        name = "lazy"

    with capture_logs() as logs:
        play_local([Lazy(), RandomBot()], seed=1)
    assert "must implement turn(view)" in logs[0]["fault"]
