"""Bot parameters in SPECs: ``search@budget_ms=50``, ``my_bot.py:MyBot@depth=3``.

The parameters are keyword arguments of the bot's class, for ``play_local``, the
arena and ``mammamia bot``; a key the class does not take, or a value it cannot
have, is one line naming the SPEC and the key (exit 2 on the command line, checked
through real subprocesses).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bots.counter import CounterBot
from bots.search import SearchBot
from client_sdk import BotSpecError, load_bot, play_local, run_arena
from client_sdk.loader import BotFactory, split_spec
from tests.conftest import MAMMAMIA

BOT_FILE = """
from client_sdk import Bot, Turn, View


class Deep(Bot):
    name = "deep"

    def __init__(self, depth: int = 1, greedy: bool = False, label: str = "x",
                 rate: float = 0.5) -> None:
        self.depth, self.greedy, self.label, self.rate = depth, greedy, label, rate

    def turn(self, view: View) -> Turn:
        return view.legal[min(self.depth, len(view.legal) - 1)]
"""


def test_values_are_whole_numbers_numbers_booleans_or_text() -> None:
    assert split_spec("search") == ("search", {}, "")
    assert split_spec("search@budget_ms=50,seed=-3,x=1.5,y=2e3,z=TRUE,w=false,name=a-b") == (
        "search",
        {"budget_ms": 50, "seed": -3, "x": 1.5, "y": 2000.0, "z": True, "w": False, "name": "a-b"},
        "budget_ms=50,seed=-3,x=1.5,y=2e3,z=TRUE,w=false,name=a-b",
    )
    # An '@' in a path (no '=' after it) is part of the path.
    assert split_spec("/tmp/a@b/bot.py:Bot") == ("/tmp/a@b/bot.py:Bot", {}, "")


def test_a_spec_without_parameters_is_the_class_itself() -> None:
    assert load_bot("search") is SearchBot
    assert load_bot("bots.search:SearchBot") is SearchBot


def test_parameters_make_a_factory_of_the_class() -> None:
    factory = load_bot("search@budget_ms=50,iterations=8,seed=3")
    assert isinstance(factory, BotFactory) and factory.name == "search"
    bot = factory()
    assert isinstance(bot, SearchBot)
    assert (bot.budget_ms, bot.iterations, bot.seed) == (50, 8, 3)
    assert factory() is not bot


def test_a_file_bot_takes_its_parameters(tmp_path: Path) -> None:
    path = tmp_path / "deep_bot.py"
    path.write_text(BOT_FILE)
    bot = load_bot(f"{path}:Deep@depth=3,greedy=true,label=fast,rate=2")()
    assert (bot.depth, bot.greedy, bot.label, bot.rate) == (3, True, "fast", 2)  # type: ignore[attr-defined]
    result = play_local([f"{path}:Deep@depth=2", "counter"], seed=3)
    assert result.names == ("deep", "counter") and result.replaced == (0, 0)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("search@budget=50", "'budget' is not a parameter of SearchBot .*did you mean 'budget_ms'"),
        ("counter@depth=3", "'depth' is not a parameter of CounterBot"),
        ("search@budget_ms=fast", "budget_ms='fast': budget_ms must be a number"),
        ("search@iterations=2.5", "iterations=2.5: iterations must be a whole number"),
        ("search@budget_ms=-5", "budget_ms must be more than 0"),
        ("search@budget_ms", "must read key=value"),
        ("search@seed=1,seed=2", "'seed' is given twice"),
    ],
)
def test_a_bad_key_or_value_is_refused_naming_the_spec(spec: str, message: str) -> None:
    with pytest.raises(BotSpecError, match=message) as info:
        load_bot(spec)
    assert repr(spec) in str(info.value) and "\n" not in str(info.value)


def test_play_local_seats_specs_with_parameters() -> None:
    result = play_local(["search@iterations=2,seed=1", CounterBot], seed=5)
    assert result.names == ("search", "counter") and result.replaced == (0, 0)
    assert result.record.replay().is_over


def test_the_arena_tells_apart_one_bot_with_other_parameters() -> None:
    result = run_arena(
        ["search@iterations=2,seed=1", "search@iterations=4,seed=1"], games=2, jobs=1
    )
    assert sorted(b.name for b in result.bots) == [
        "search@iterations=2,seed=1",
        "search@iterations=4,seed=1",
    ]
    plain = run_arena(["counter", "search@iterations=2"], games=2, jobs=1)
    assert sorted(b.name for b in plain.bots) == ["counter", "search"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MAMMAMIA), *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (("arena", "counter", "search@budgetms=50", "--games", "1"), "budgetms"),
        (("arena", "counter", "search@budget_ms=soon", "--games", "1"), "budget_ms"),
        (
            ("arena", "counter", "bench/flat_mc.py:FlatMonteCarlo@rollout=fast", "--games", "1"),
            "rollout",
        ),
        (("bot", "search@candidates=0", "--token", "T", "--server", "127.0.0.1:1"), "candidates"),
        (("bot", "counter@depth=2", "--token", "T", "--server", "127.0.0.1:1"), "depth"),
    ],
)
def test_the_command_line_refuses_a_bad_parameter_in_one_line(
    args: tuple[str, ...], key: str
) -> None:
    done = run(*args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    spec = next(a for a in args if "@" in a)
    assert lines[0].startswith(f"mammamia {args[0]}: bot {spec!r}:") and key in lines[0]
    assert done.stdout == ""


def test_the_command_line_plays_a_spec_with_parameters() -> None:
    done = run(
        "arena",
        "counter",
        "search@iterations=2,seed=4",
        "--games",
        "2",
        "--jobs",
        "1",
        "--json",
        "--no-progress",
    )
    assert done.returncode == 0, done.stderr
    assert '"name": "search"' in done.stdout
