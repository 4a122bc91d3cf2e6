"""Finding a bot class from a SPEC: a built-in name, ``module:Class`` or ``file.py:Class``,
optionally followed by ``@key=value[,key=value]``: keyword arguments for the class."""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from mammamia import MammaMiaError

from .bot import Bot

BUILTIN: Final = {
    "random": "bots.random_bot:RandomBot",
    "greedy": "bots.greedy:GreedyBot",
    "counter": "bots.counter:CounterBot",
    "search": "bots.search:SearchBot",
}
"""The built-in bots by name."""


class BotSpecError(MammaMiaError):
    """A SPEC that names no loadable Bot class; the message names the SPEC."""


class BotFactory:
    """A Bot class with the keyword arguments a SPEC gave it (``search@budget_ms=50``):
    calling it makes one bot. ``name`` is the class's; ``params`` the arguments and
    ``label`` them as the SPEC wrote them (``budget_ms=50``)."""

    def __init__(self, cls: type[Bot], params: dict[str, Any], label: str) -> None:
        self.cls = cls
        self.params = dict(params)
        self.label = label
        self.name = str(getattr(cls, "name", None) or cls.__name__)

    def __call__(self) -> Bot:
        return self.cls(**self.params)

    def __repr__(self) -> str:
        return f"BotFactory({self.cls.__qualname__}@{self.label})"


_PARAMS: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=[^,=]*(,[A-Za-z_][A-Za-z0-9_]*=[^,=]*)*$")
_INT: Final = re.compile(r"^[-+]?[0-9]+$")
_FLOAT: Final = re.compile(r"^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$")


def split_spec(spec: str) -> tuple[str, dict[str, Any], str]:
    """Returns (the SPEC without its parameters, the parameters, their text).

    The parameters are what follows the last ``@`` when it holds a ``=`` (a path
    with an ``@`` in it is left alone), as ``key=value`` pairs separated by commas;
    values are whole numbers, decimal numbers, ``true`` or ``false`` (any case),
    else text. ``search`` gives ``("search", {}, "")``.
    """
    base, at, text = spec.rpartition("@")
    if not at or (
        "=" not in text and ("/" in text or "\\" in text or ":" in text or text.endswith(".py"))
    ):
        return spec, {}, ""
    if not base:
        raise BotSpecError(f"bot {spec!r}: name the bot before its parameters")
    if not _PARAMS.match(text):
        raise BotSpecError(
            f"bot {spec!r}: parameters after '@' must read key=value[,key=value], got {text!r}"
        )
    params: dict[str, Any] = {}
    for pair in text.split(","):
        key, _, raw = pair.partition("=")
        if key in params:
            raise BotSpecError(f"bot {spec!r}: parameter {key!r} is given twice")
        params[key] = _value(raw)
    return base, params, text


def _value(raw: str) -> Any:
    if _INT.match(raw):
        return int(raw)
    if _FLOAT.match(raw):
        return float(raw)
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    return raw


def code_version(factory: Callable[[], Bot]) -> str:
    """Returns the default ladder version of a bot: the first 12 hex digits of the
    SHA-256 of the source file that defines its class (its bytes as stored; the
    SPEC's ``@key=value`` parameters are not part of it). Raises BotSpecError when
    that file cannot be read (a class made without one: give a version instead)."""
    cls = factory.cls if isinstance(factory, BotFactory) else factory
    try:
        source = inspect.getsourcefile(cls)
        if source is None:
            raise OSError("no source file")
        code = Path(source).read_bytes()
    except (OSError, TypeError) as e:
        raise BotSpecError(f"cannot hash the code of {factory!r} for its version: {e}") from None
    return hashlib.sha256(code).hexdigest()[:12]


def load_bot(spec: str) -> Callable[[], Bot]:
    """Returns the Bot class a SPEC names; raises BotSpecError naming what is wrong.

    SPEC is a built-in name (``random``, ``greedy``, ``counter``, ``search``),
    ``module:Class`` (an importable module) or ``path/to/file.py:Class``. The class
    may be left out (``file.py`` or ``module``) when the module defines exactly one
    Bot subclass. A file's folder goes on ``sys.path``, so it may import its
    neighbours. A misspelt class gets a suggestion; the SDK's base ``Bot`` itself is
    not a bot.

    A SPEC may end with ``@key=value[,key=value]`` (``search@budget_ms=50``): the
    result is then a ``BotFactory`` that makes the class with those keyword
    arguments. A key that is not a parameter of the class's ``__init__``, a value of
    the wrong type for the parameter's default or annotation, or a value the class
    refuses when it is made is a BotSpecError naming the SPEC and the key.
    """
    base, params, label = split_spec(spec)
    cls = _load_class(spec, base)
    if not label:
        return cls
    _check_params(spec, cls, params)
    factory = BotFactory(cls, params, label)
    try:
        factory()
    except (TypeError, ValueError) as e:
        raise BotSpecError(f"bot {spec!r}: {_one_line(e)}") from None
    return factory


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _check_params(spec: str, cls: type[Bot], params: dict[str, Any]) -> None:
    """Raises BotSpecError for a key the class does not take or a value of a type its
    parameter cannot have."""
    if cls.__init__ is object.__init__:
        key = next(iter(params))
        raise BotSpecError(
            f"bot {spec!r}: {key!r} is not a parameter of {cls.__qualname__} (it takes none)"
        )
    try:
        signature = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return
    taken = {
        name: p
        for name, p in signature.parameters.items()
        if name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    anything = any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values())
    try:
        hints = inspect.get_annotations(cls.__init__, eval_str=True)
    except Exception:
        hints = {}
    for key, value in params.items():
        parameter = taken.get(key)
        if parameter is None:
            if anything:
                continue
            known = ", ".join(taken) or "none"
            close = difflib.get_close_matches(key, list(taken), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise BotSpecError(
                f"bot {spec!r}: {key!r} is not a parameter of "
                f"{cls.__qualname__} (its parameters: {known}){hint}"
            )
        wanted = _wanted_types(hints.get(key, inspect.Parameter.empty), parameter.default)
        if wanted and not any(_fits(value, t) for t in wanted):
            names = " or ".join(sorted({_type_word(t) for t in wanted}))
            raise BotSpecError(f"bot {spec!r}: {key}={value!r}: {key} must be {names}")


def _wanted_types(hint: Any, default: Any) -> set[type]:
    """Returns the simple types (bool, int, float, str) a parameter takes, from its
    annotation or else its default; empty when neither says."""
    simple = {bool, int, float, str}
    if hint is not inspect.Parameter.empty:
        args = getattr(hint, "__args__", None)
        found = {a for a in args if a in simple} if args else ({hint} if hint in simple else set())
        if args and type(None) in args and not found:
            return set()
        if found or hint in simple:
            return found
        return set()
    if default is not inspect.Parameter.empty and default is not None and type(default) in simple:
        return {type(default)}
    return set()


def _fits(value: Any, wanted: type) -> bool:
    if wanted is float:
        return type(value) in (int, float)
    if wanted is int:
        return type(value) is int
    return type(value) is wanted


def _type_word(wanted: type) -> str:
    return {bool: "true or false", int: "a whole number", float: "a number", str: "text"}[wanted]


def _load_class(spec: str, target_spec: str) -> type[Bot]:
    """Returns the Bot class of a SPEC without parameters; raises BotSpecError."""
    target = BUILTIN.get(target_spec, target_spec)
    where, _, cls_name = target.rpartition(":") if ":" in target else (target, "", "")
    if where.endswith(".py") or "/" in where or "\\" in where:
        module = _load_file(spec, Path(where))
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise BotSpecError(
                f"bot {spec!r}: cannot import module {where!r}: {e}. "
                f"Built-in bots are {', '.join(BUILTIN)}"
            ) from None
    if cls_name:
        cls = getattr(module, cls_name, None)
        if cls is None:
            close = difflib.get_close_matches(
                cls_name, _bot_classes(module, own=False), n=1
            ) or difflib.get_close_matches(
                cls_name, [n for n in vars(module) if not n.startswith("_")], n=1
            )
            hint = f": did you mean {where}:{close[0]}?" if close else ""
            raise BotSpecError(f"bot {spec!r}: {where!r} has no attribute {cls_name!r}{hint}")
        if cls is Bot:
            subclasses = _bot_classes(module)
            hint = f" (Bot subclasses here: {', '.join(subclasses)})" if subclasses else ""
            raise BotSpecError(
                f"bot {spec!r}: {cls_name!r} is the SDK's base class "
                f"client_sdk.Bot, not a bot: name your subclass of it{hint}"
            )
    else:
        found = [
            v
            for v in vars(module).values()
            if isinstance(v, type)
            and issubclass(v, Bot)
            and v is not Bot
            and v.__module__ == module.__name__
        ]
        if len(found) != 1:
            names = ", ".join(sorted(c.__name__ for c in found)) or "none"
            raise BotSpecError(
                f"bot {spec!r}: name the class as {where}:Class (Bot subclasses found: {names})"
            )
        cls = found[0]
    if not (isinstance(cls, type) and issubclass(cls, Bot)):
        raise BotSpecError(f"bot {spec!r}: {cls_name!r} is not a subclass of client_sdk.Bot")
    return cls


def _bot_classes(module: ModuleType, own: bool = True) -> list[str]:
    """Returns the names of the Bot subclasses a module holds (defined in it, if ``own``)."""
    return sorted(
        n
        for n, v in vars(module).items()
        if isinstance(v, type)
        and issubclass(v, Bot)
        and v is not Bot
        and (not own or v.__module__ == module.__name__)
    )


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
        raise BotSpecError(
            f"bot {spec!r}: {str(path)!r} failed to load: {type(e).__name__}: {e}"
        ) from None
    return module
