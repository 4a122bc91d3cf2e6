"""How the server shows what a caller sent: quoted, and cut short.

A caller's input may be as large as a request may be (megabytes). A refusal's status
message and trailing metadata travel in HTTP/2 headers, which a client refuses past
its metadata limit (8 KiB by gRPC's default): a refusal that carried the input whole
would reach its client as RESOURCE_EXHAUSTED instead of its own code. So every
status message, trailing metadata value and log line that names a caller's input
quotes it with :func:`quoted` (a list with :func:`quoted_list`), at most
QUOTE_LIMIT characters of it; :func:`fitted` bounds a whole message as the last
line of defence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

QUOTE_LIMIT: Final = 80
"""How many characters of a caller's value a message quotes."""

LIST_SHOWN: Final = 3
"""How many items of a caller's list a message quotes."""

MESSAGE_LIMIT: Final = 500
"""The most characters a status message or metadata value sent back may have."""


def quoted(text: str) -> str:
    """Returns ``text`` quoted as Python quotes it, cut to its first QUOTE_LIMIT
    characters (then followed by ``...`` and its length)."""
    if len(text) <= QUOTE_LIMIT:
        return repr(text)
    return f"{text[:QUOTE_LIMIT]!r}... ({len(text)} characters)"


def quoted_list(items: Sequence[str]) -> str:
    """Returns ``items`` quoted as a list: each with :func:`quoted`, the first
    LIST_SHOWN of them, then how many more there are."""
    shown = ", ".join(quoted(item) for item in items[:LIST_SHOWN])
    more = len(items) - LIST_SHOWN
    return f"[{shown}, ... {more} more]" if more > 0 else f"[{shown}]"


def fitted(message: str) -> str:
    """Returns ``message`` cut to MESSAGE_LIMIT characters (ending ``...`` when cut):
    fit for a status message or a metadata value."""
    if len(message) <= MESSAGE_LIMIT:
        return message
    return message[: MESSAGE_LIMIT - 3] + "..."
