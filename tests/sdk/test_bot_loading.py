"""Bot SPECs: built-in names, module:Class, path/to/file.py:Class, and clear refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bots.counter import CounterBot
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from client_sdk import Bot, BotSpecError, load_bot, play_local

BOT_FILE = '''
from client_sdk import Bot, Turn, View


class LastOption(Bot):
    name = "last-option"

    def turn(self, view: View) -> Turn:
        return view.legal[-1]
'''


@pytest.mark.parametrize(("spec", "cls"), [("random", RandomBot), ("greedy", GreedyBot),
                                           ("counter", CounterBot),
                                           ("bots.greedy:GreedyBot", GreedyBot),
                                           ("bots.counter", CounterBot)])
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


def test_a_module_on_the_path_loads_by_name(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_sdk_test_bot.py").write_text(BOT_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert load_bot("my_sdk_test_bot:LastOption")().name == "last-option"
    finally:
        sys.modules.pop("my_sdk_test_bot", None)


@pytest.mark.parametrize(("spec", "message"), [
    ("alphago", "cannot import module 'alphago'"),
    ("bots.greedy:Nope", "has no attribute 'Nope'"),
    ("mammamia:State", "is not a subclass of client_sdk.Bot"),
    ("missing/file.py:Bot", "no such file"),
])
def test_a_bad_spec_is_refused_naming_it(spec: str, message: str) -> None:
    with pytest.raises(BotSpecError, match=message) as info:
        load_bot(spec)
    assert repr(spec) in str(info.value)


def test_a_file_that_fails_to_import_is_refused_with_the_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("import no_such_module_anywhere\n")
    with pytest.raises(BotSpecError, match="failed to load: ModuleNotFoundError"):
        load_bot(f"{path}:Anything")
