"""Bot SPECs: built-in names, module:Class, path/to/file.py:Class, and clear refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bots.counter import CounterBot
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from client_sdk import Bot, BotSpecError, load_bot, play_local

BOT_FILE = """
from client_sdk import Bot, Turn, View


class LastOption(Bot):
    name = "last-option"

    def turn(self, view: View) -> Turn:
        return view.legal[-1]
"""


@pytest.mark.parametrize(
    ("spec", "cls"),
    [
        ("random", RandomBot),
        ("greedy", GreedyBot),
        ("counter", CounterBot),
        ("bots.greedy:GreedyBot", GreedyBot),
        ("bots.counter", CounterBot),
    ],
)
def test_built_in_names_and_modules_load(spec: str, cls: type[Bot]) -> None:
    assert load_bot(spec) is cls


def test_a_file_loads_with_or_without_its_class_name(tmp_path: Path) -> None:
    path = tmp_path / "last_option.py"
    path.write_text(BOT_FILE)
    with_name = load_bot(f"{path}:LastOption")
    without = load_bot(str(path))
    assert with_name is without and with_name().name == "last-option"
    result = play_local([with_name, RandomBot], seed=4)
    assert result.names == ("last-option", "random") and result.replaced == (0, 0)


def test_a_module_on_the_path_loads_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_sdk_test_bot.py").write_text(BOT_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert load_bot("my_sdk_test_bot:LastOption")().name == "last-option"
    finally:
        sys.modules.pop("my_sdk_test_bot", None)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("alphago", "cannot import module 'alphago'"),
        ("bots.greedy:Nope", "has no attribute 'Nope'"),
        ("mammamia:State", "is not a subclass of client_sdk.Bot"),
        ("missing/file.py:Bot", "no such file"),
    ],
)
def test_a_bad_spec_is_refused_naming_it(spec: str, message: str) -> None:
    with pytest.raises(BotSpecError, match=message) as info:
        load_bot(spec)
    assert repr(spec) in str(info.value)


def test_a_file_that_fails_to_import_is_refused_with_the_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("import no_such_module_anywhere\n")
    with pytest.raises(BotSpecError, match="failed to load: ModuleNotFoundError"):
        load_bot(f"{path}:Anything")


HELPER = "def last(view):\n    return view.legal[-1]\n"

BOT_WITH_HELPER = """
from client_sdk import Bot

from my_bot_helpers import last


class Helped(Bot):
    def choose(self, view):
        return last(view)
"""


def test_a_file_imports_the_modules_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = tmp_path / "mybot"
    folder.mkdir()
    (folder / "my_bot_helpers.py").write_text(HELPER)
    (folder / "helped.py").write_text(BOT_WITH_HELPER)
    try:
        cls = load_bot(f"{folder / 'helped.py'}:Helped")
        assert cls.__name__ == "Helped"
        assert str(folder.resolve()) in sys.path
    finally:
        sys.modules.pop("my_bot_helpers", None)


def test_a_misspelt_class_gets_a_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "last_option_typo.py"
    path.write_text(BOT_FILE)
    with pytest.raises(BotSpecError, match=r"did you mean .*:LastOption\?"):
        load_bot(f"{path}:LastOptoin")
    with pytest.raises(BotSpecError, match=r"did you mean bots.greedy:GreedyBot\?"):
        load_bot("bots.greedy:GreedBot")


def test_the_sdk_base_class_is_not_a_bot(tmp_path: Path) -> None:
    path = tmp_path / "base_only.py"
    path.write_text(BOT_FILE)
    with pytest.raises(BotSpecError, match=r"base class client_sdk.Bot, not a bot.*LastOption"):
        load_bot(f"{path}:Bot")
    with pytest.raises(BotSpecError, match="base class"):
        load_bot("client_sdk:Bot")
