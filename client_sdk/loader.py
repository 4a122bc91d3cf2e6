"""Finding a bot class from a SPEC: a built-in name, ``module:Class`` or ``file.py:Class``."""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Final

from mammamia import MammaMiaError

from .bot import Bot

BUILTIN: Final = {
    "random": "bots.random_bot:RandomBot",
    "greedy": "bots.greedy:GreedyBot",
    "counter": "bots.counter:CounterBot",
}
"""The built-in bots by name."""


class BotSpecError(MammaMiaError):
    """A SPEC that names no loadable Bot class; the message names the SPEC."""


def load_bot(spec: str) -> Callable[[], Bot]:
    """Returns the Bot class a SPEC names; raises BotSpecError naming what is wrong.

    SPEC is a built-in name (``random``, ``greedy``, ``counter``), ``module:Class``
    (an importable module) or ``path/to/file.py:Class``. The class may be left out
    (``file.py`` or ``module``) when the module defines exactly one Bot subclass. A
    file's folder goes on ``sys.path``, so it may import its neighbours. A misspelt
    class gets a suggestion; the SDK's base ``Bot`` itself is not a bot.
    """
    target = BUILTIN.get(spec, spec)
    where, _, cls_name = target.rpartition(":") if ":" in target else (target, "", "")
    if where.endswith(".py") or "/" in where or "\\" in where:
        module = _load_file(spec, Path(where))
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise BotSpecError(f"bot {spec!r}: cannot import module {where!r}: {e}. "
                               f"Built-in bots are {', '.join(BUILTIN)}") from None
    if cls_name:
        cls = getattr(module, cls_name, None)
        if cls is None:
            close = difflib.get_close_matches(cls_name, _bot_classes(module, own=False), n=1) \
                or difflib.get_close_matches(cls_name, [n for n in vars(module)
                                                        if not n.startswith("_")], n=1)
            hint = f": did you mean {where}:{close[0]}?" if close else ""
            raise BotSpecError(f"bot {spec!r}: {where!r} has no attribute {cls_name!r}{hint}")
        if cls is Bot:
            subclasses = _bot_classes(module)
            hint = f" (Bot subclasses here: {', '.join(subclasses)})" if subclasses else ""
            raise BotSpecError(f"bot {spec!r}: {cls_name!r} is the SDK's base class "
                               f"client_sdk.Bot, not a bot: name your subclass of it{hint}")
    else:
        found = [v for v in vars(module).values() if isinstance(v, type)
                 and issubclass(v, Bot) and v is not Bot and v.__module__ == module.__name__]
        if len(found) != 1:
            names = ", ".join(sorted(c.__name__ for c in found)) or "none"
            raise BotSpecError(f"bot {spec!r}: name the class as {where}:Class "
                               f"(Bot subclasses found: {names})")
        cls = found[0]
    if not (isinstance(cls, type) and issubclass(cls, Bot)):
        raise BotSpecError(f"bot {spec!r}: {cls_name!r} is not a subclass of client_sdk.Bot")
    return cls


def _bot_classes(module: ModuleType, own: bool = True) -> list[str]:
    """Returns the names of the Bot subclasses a module holds (defined in it, if ``own``)."""
    return sorted(n for n, v in vars(module).items() if isinstance(v, type)
                  and issubclass(v, Bot) and v is not Bot
                  and (not own or v.__module__ == module.__name__))


def _load_file(spec: str, path: Path) -> ModuleType:
    """Returns the module loaded from a Python file, its folder first on ``sys.path``
    (so that it can import the modules beside it); raises BotSpecError."""
    if not path.is_file():
        raise BotSpecError(f"bot {spec!r}: no such file {str(path)!r}")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = f"_mammamia_bot_{abs(hash(str(path.resolve())))}"
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise BotSpecError(f"bot {spec!r}: cannot load {str(path)!r} as Python")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[name]
        raise BotSpecError(f"bot {spec!r}: {str(path)!r} failed to load: "
                           f"{type(e).__name__}: {e}") from None
    return module
