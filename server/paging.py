"""Page tokens: the one way every list call and list command pages.

A list is read in a stable order, each listing by a key of its own that never
changes for an item and never repeats (newest first: the creation time, then the
id). A page is read with one more row than it holds; when that row exists, the page
ends with a token naming the key of its last item, and the next page starts after
that key. A cursor, not an offset: items that arrive while a client pages (a match
created meanwhile goes to the head of a newest-first list) neither come twice nor
push others out of the pages still to come, so paging to the end gives every item
that was there when it started exactly once.

A token is opaque to its client: URL-safe base64 (unpadded) of a small JSON text
(the scheme's version, the listing, the list's scope, the key) followed by a check
of 8 bytes. The scope binds a token to the filter it was made for (a bot's name, a
status), so that it is refused with another. A token that does not decode, whose
check fails (edited or cut), whose version is not this one (stale: made by an
older server) or that belongs to another listing or scope raises
:class:`BadPageToken`, which a servicer answers with INVALID_ARGUMENT; its message
names the token, quoted short (``server.quoting``).

The check is not a secret: it catches a token that was changed or cut, not a
client that builds one. A built token can only name a place in a list the client
may read anyway.

A call without a token gets the first page; a call without a page size gets
DEFAULT_PAGE_SIZE items; no page has more than MAX_PAGE_SIZE.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from .quoting import quoted

VERSION: Final = 1
"""The token scheme's version; a token of another version is refused as stale."""

DEFAULT_PAGE_SIZE: Final = 100
"""The items in a page when the call asks for no size."""

MAX_PAGE_SIZE: Final = 1000
"""The most items a page holds, whatever the call asks for."""

_CHECK_BYTES: Final = 8
_CHECK_KEY: Final = b"mammamia.v1 page token"

KeyPart = str | int | float
Key = tuple[KeyPart, ...]
T = TypeVar("T")


class BadPageToken(ValueError):
    """A page token that this list cannot continue from (the message names it)."""


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a list: its items, and the token of the next page ("" at the end)."""

    items: list[T]
    next_token: str


def page_size(asked: int, default: int = DEFAULT_PAGE_SIZE, maximum: int = MAX_PAGE_SIZE) -> int:
    """Returns the size of a page asked for as ``asked``: ``default`` for 0, at most
    ``maximum``.

    Raises ValueError for a negative size.
    """
    if asked < 0:
        raise ValueError(f"page size {asked}: 0 (the default, {default}) or more")
    return min(asked or default, maximum)


def _check(payload: bytes) -> bytes:
    return hashlib.blake2b(payload, digest_size=_CHECK_BYTES, key=_CHECK_KEY).digest()


def token_of(listing: str, key: Key, scope: str = "") -> str:
    """Returns the token of the page that starts after ``key`` in ``listing`` (read
    with the filter ``scope``)."""
    payload = json.dumps([VERSION, listing, scope, list(key)], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(payload + _check(payload)).decode("ascii").rstrip("=")


def key_of(token: str, listing: str, shape: Sequence[type], scope: str = "") -> Key | None:
    """Returns the key a page of ``listing`` (read with the filter ``scope``) starts
    after: None for the empty token (the first page).

    ``shape`` gives the type of each part of the key (``float`` also takes an int).

    Raises BadPageToken for a token that does not decode, fails its check, is of
    another version, or was made for another listing, scope or key shape.
    """
    if not token:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise BadPageToken(f"page_token {quoted(token)} is not a page token") from None
    payload, check = raw[:-_CHECK_BYTES], raw[-_CHECK_BYTES:]
    if len(raw) <= _CHECK_BYTES or _check(payload) != check:
        raise BadPageToken(
            f"page_token {quoted(token)} is not a page token this server made "
            "(changed or cut); start again without a token"
        )
    try:
        version, made_for, made_scope, key = json.loads(payload)
    except ValueError:
        raise BadPageToken(f"page_token {quoted(token)} is not a page token") from None
    if version != VERSION:
        raise BadPageToken(
            f"page_token {quoted(token)} is stale (a version {version!r} token; "
            f"this server reads version {VERSION}); start again without a token"
        )
    if made_for != listing or made_scope != scope:
        raise BadPageToken(
            f"page_token {quoted(token)} belongs to another list or filter; "
            "send the same request with only the token changed"
        )
    if (
        not isinstance(key, list)
        or len(key) != len(shape)
        or not all(_fits(part, kind) for part, kind in zip(key, shape, strict=True))
    ):
        raise BadPageToken(f"page_token {quoted(token)} is not a page token of this list")
    return tuple(float(p) if kind is float else p for p, kind in zip(key, shape, strict=True))


def _fits(part: object, kind: type) -> bool:
    if isinstance(part, bool):
        return False
    if kind is float:
        return isinstance(part, int | float)
    return isinstance(part, kind)


def page_of(
    rows: Sequence[T], size: int, listing: str, key: Callable[[T], Key], scope: str = ""
) -> Page[T]:
    """Returns the page of ``rows`` read with one more row than ``size``: the first
    ``size`` of them, and the token of the next page when there were more."""
    if len(rows) <= size:
        return Page(list(rows), "")
    items = list(rows[:size])
    return Page(items, token_of(listing, key(items[-1]), scope) if items else "")


def follow(read: Callable[[str], tuple[Sequence[T], str]], limit: int | None = None) -> Iterator[T]:
    """Yields the items of every page ``read`` returns for a token (the first page
    for ""), following each next token to the end, or up to ``limit`` items.

    Raises BadPageToken when a page names the token it was read with as its next
    (a list that would never end).
    """
    token = ""
    given = 0
    while True:
        items, next_token = read(token)
        for item in items:
            if limit is not None and given >= limit:
                return
            yield item
            given += 1
        if not next_token or (limit is not None and given >= limit):
            return
        if next_token == token:
            raise BadPageToken(f"page_token {quoted(token)} came back as its own next page")
        token = next_token
