"""Refusals quote caller input one way (server/quoting.py): a refusal's message never
formats a value with ``!r`` (which quotes it whole) but with ``quoted`` or
``quoted_list``, and those cut what they quote."""

from __future__ import annotations

import ast
from pathlib import Path

from server.quoting import LIST_SHOWN, MESSAGE_LIMIT, QUOTE_LIMIT, fitted, quoted, quoted_list

ROOT = Path(__file__).resolve().parents[1] / "server"

#: What builds a refusal (a status, or an error that becomes one): its message
#: arguments may not quote a value whole.
REFUSALS = frozenset(
    {
        "abort",
        "Refused",
        "_Refusal",
        "refused",
        "WireError",
        "PlaceError",
        "LadderError",
        "NameTakenError",
        "LadderFullError",
        "UnknownBotError",
        "ReplacedError",
        "LadderClosedError",
        "BadRequest",
        "UnknownHandle",
        "TooManyStates",
        "set_details",
        "_error",
    }
)


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def whole_quotes(source: str) -> list[int]:
    """Returns the lines where a refusal's message formats a value with ``!r``."""
    found: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or _name(node.func) not in REFUSALS:
            continue
        for argument in [*node.args, *(k.value for k in node.keywords)]:
            for inner in ast.walk(argument):
                if isinstance(inner, ast.FormattedValue) and inner.conversion == ord("r"):
                    found.append(inner.lineno)
    return found


def test_no_refusal_quotes_a_value_whole() -> None:
    offences = [
        f"{path.relative_to(ROOT.parent)}:{line}"
        for path in sorted(ROOT.rglob("*.py"))
        for line in whole_quotes(path.read_text())
    ]
    assert offences == [], "quote caller input with server.quoting.quoted, not !r"


def test_the_check_finds_a_whole_quote() -> None:
    assert whole_quotes('raise Refused(code, f"no bot {name!r}")\n') == [1]
    assert whole_quotes('raise Refused(code, f"no bot {quoted(name)}")\n') == []


def test_a_quote_is_cut_and_says_how_long_the_value_was() -> None:
    assert quoted("red") == "'red'"
    long = quoted("x" * 500_000)
    assert long.startswith(repr("x" * QUOTE_LIMIT)) and "500000 characters" in long
    assert len(long) < QUOTE_LIMIT + 40


def test_a_list_is_quoted_by_its_first_items_and_its_count() -> None:
    assert quoted_list(["red", "blue"]) == "['red', 'blue']"
    many = quoted_list(["c" * 200] * 100_000)
    assert many.count("'...") == LIST_SHOWN and f"{100_000 - LIST_SHOWN} more" in many
    assert len(many) < MESSAGE_LIMIT


def test_a_message_is_fitted() -> None:
    assert fitted("short") == "short"
    assert len(fitted("m" * 10_000)) == MESSAGE_LIMIT
