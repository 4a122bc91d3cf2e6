"""Checked numbers for the command line, and defaults read from environment variables.

Each checker is an argparse ``type=``: it returns the value or raises
``argparse.ArgumentTypeError`` with a message that names what was wrong. A default
read from the environment goes through the same checker when the
flag is absent (:func:`env_default`), and its error names the variable, so ``MAMMAMIA_PORT=abc`` is
reported as such by the parser (exit 2) instead of crashing it while it is built.
Kept light: standard library only.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from typing import NoReturn, TypeVar

T = TypeVar("T")

MAX_DEADLINE_MS = 10 * 60 * 1000  # the server's limit on a decision's deadline
MAX_TIME_BANK_MS = 60 * 60 * 1000  # and on a seat's time bank
MAX_SEED = 2**63 - 1


class FromEnv(str):
    """A default taken from the environment variable ``var``."""

    var: str


def env(name: str, default: str | None = None) -> str | None:
    """Returns the value of environment variable ``name``, or ``default`` when unset."""
    return os.environ.get(name, default)


def env_default(name: str, default: str) -> str:
    """Returns the value of environment variable ``name`` marked with its name, so that
    the checker of a flag whose default it is can say where it came from, or
    ``default`` when it is unset."""
    value = os.environ.get(name)
    if value is None:
        return default
    marked = FromEnv(value)
    marked.var = name
    return marked


def checked(convert: Callable[[str], T]) -> Callable[[str], T]:
    """Returns an argparse ``type=`` that applies ``convert`` and turns its ValueError
    into an ArgumentTypeError naming the text (and its variable, for an env default)."""

    def parse(text: str) -> T:
        try:
            return convert(text)
        except ValueError as e:
            source = f"{text.var}={text!r}" if isinstance(text, FromEnv) else repr(text)
            raise argparse.ArgumentTypeError(f"{source}: {e}") from None

    parse.__name__ = convert.__name__
    return parse


def _whole(text: str, low: int, high: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"need a whole number from {low} to {high}") from None
    if not low <= value <= high:
        raise ValueError(f"need a whole number from {low} to {high}")
    return value


def _seconds(text: str, low: float, high: float, *, low_included: bool) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        value = math.nan
    above = value >= low if low_included else value > low
    if not (math.isfinite(value) and above and value <= high):
        bound = f"from {low:g}" if low_included else f"above {low:g}"
        raise ValueError(f"need a number of seconds {bound} up to {high:g}")
    return value


@checked
def port(text: str) -> int:
    """Returns a TCP port, 0 (any free one) to 65535."""
    return _whole(text, 0, 65535)


@checked
def address(text: str) -> str:
    """Returns a ``HOST:PORT`` address (``[v6]:PORT`` for an IPv6 host), port 1 to 65535,
    or the empty text (the caller's default) for an empty one."""
    if not text.strip():
        return ""
    host, colon, number = text.strip().rpartition(":")
    if not colon or not host.strip("[]") or (":" in host and not host.startswith("[")):
        raise ValueError("need HOST:PORT, e.g. host-a.example.org:50051 or [::1]:50051")
    _whole(number, 1, 65535)
    return text.strip()


@checked
def deadline_ms(text: str) -> int:
    """Returns a per-decision deadline in milliseconds, 1 to MAX_DEADLINE_MS."""
    return _whole(text, 1, MAX_DEADLINE_MS)


@checked
def deadline_ms_or_default(text: str) -> int:
    """Returns a deadline in milliseconds, or 0 for the server's default."""
    return _whole(text, 0, MAX_DEADLINE_MS)


@checked
def count(text: str) -> int:
    """Returns a whole number of at least 0."""
    return _whole(text, 0, 2**31 - 1)


@checked
def positive(text: str) -> int:
    """Returns a whole number of at least 1."""
    return _whole(text, 1, 2**31 - 1)


@checked
def players(text: str) -> int:
    """Returns a player count, 2 to 5 (R-SETUP-1)."""
    return _whole(text, 2, 5)


@checked
def seed(text: str) -> int:
    """Returns a game seed, 0 to 2**63 - 1."""
    return _whole(text, 0, MAX_SEED)


@checked
def timeout(text: str) -> float:
    """Returns a positive, finite number of seconds (up to a day)."""
    return _seconds(text, 0, 86400, low_included=False)


@checked
def grace(text: str) -> float:
    """Returns a number of seconds, 0 or more (up to a day)."""
    return _seconds(text, 0, 86400, low_included=True)


@checked
def deadline_s(text: str) -> float:
    """Returns a per-decision deadline in seconds, 0.001 up to MAX_DEADLINE_MS / 1000."""
    return _seconds(text, 0.001, MAX_DEADLINE_MS / 1000, low_included=True)


@checked
def time_bank_s(text: str) -> float:
    """Returns a time bank in seconds, 0 up to MAX_TIME_BANK_MS / 1000."""
    return _seconds(text, 0, MAX_TIME_BANK_MS / 1000, low_included=True)


def one_line_errors(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Returns ``parser``, made to report a bad argument as one line on stderr (its
    prog and the message, no usage) and exit 2, as the other commands' errors are."""

    def error(message: str) -> NoReturn:
        parser.exit(2, f"{parser.prog}: {message}\n")

    # On the instance, so that parsers made by add_parser get it too; mypy refuses
    # any assignment to a method, and argparse has no hook for its error output.
    parser.error = error  # type: ignore[method-assign]
    return parser
