"""Page tokens (server/paging.py): round trips, refusals of forged, stale and foreign
tokens, and paging a list that grows while it is read."""

from __future__ import annotations

import base64
import json

import pytest

from server import paging
from server.paging import BadPageToken, follow, key_of, page_of, page_size, token_of

SHAPE = (float, str)


def test_a_token_gives_back_its_key() -> None:
    token = token_of("ladder.matches", (1733400000.125, "m-7"), scope="bot-a")
    assert key_of(token, "ladder.matches", SHAPE, scope="bot-a") == (1733400000.125, "m-7")
    assert key_of("", "ladder.matches", SHAPE) is None  # no token: the first page
    assert "=" not in token and "/" not in token and "+" not in token


def test_page_sizes() -> None:
    assert page_size(0) == paging.DEFAULT_PAGE_SIZE
    assert page_size(7) == 7
    assert page_size(10**9) == paging.MAX_PAGE_SIZE
    assert page_size(0, default=20, maximum=500) == 20
    with pytest.raises(ValueError, match="page size -1"):
        page_size(-1)


def _payload(token: str) -> bytes:
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    return raw[:-8]


def _forged(payload: bytes, check: bytes) -> str:
    return base64.urlsafe_b64encode(payload + check).decode().rstrip("=")


@pytest.mark.parametrize(
    ("token", "says"),
    [
        ("not a token!", "is not a page token"),
        ("", None),
        ("AAAA", "changed or cut"),
        ("x" * 400, "characters"),  # quoted short
    ],
)
def test_garbage_is_refused_naming_the_token(token: str, says: str | None) -> None:
    if says is None:
        assert key_of(token, "l", SHAPE) is None
        return
    with pytest.raises(BadPageToken) as refused:
        key_of(token, "l", SHAPE)
    assert says in str(refused.value)
    assert str(refused.value).startswith("page_token '")
    assert len(str(refused.value)) < 300


def test_an_edited_token_fails_its_check() -> None:
    token = token_of("l", (5.0, "b"))
    payload = _payload(token).replace(b'"b"', b'"a"')
    with pytest.raises(BadPageToken, match="changed or cut"):
        key_of(_forged(payload, b"\0" * 8), "l", SHAPE)
    with pytest.raises(BadPageToken, match="changed or cut"):
        key_of(token[:-3], "l", SHAPE)


def test_a_stale_token_is_refused() -> None:
    payload = json.dumps([0, "l", "", [5.0, "b"]], separators=(",", ":")).encode()
    stale = _forged(payload, paging._check(payload))
    with pytest.raises(BadPageToken, match="stale"):
        key_of(stale, "l", SHAPE)


def test_a_token_of_another_list_or_filter_is_refused() -> None:
    token = token_of("ladder.matches", (5.0, "b"), scope="bot-a")
    with pytest.raises(BadPageToken, match="another list or filter"):
        key_of(token, "ladder.matches", SHAPE, scope="bot-b")
    with pytest.raises(BadPageToken, match="another list or filter"):
        key_of(token, "organiser.matches", SHAPE, scope="bot-a")
    with pytest.raises(BadPageToken, match="not a page token of this list"):
        key_of(token, "ladder.matches", (int, str), scope="bot-a")


def test_paging_a_list_that_grows_at_its_head_gives_each_item_once() -> None:
    # Newest first by (created, id); items arrive at the head between pages.
    items = [(float(t), f"m{t}") for t in range(1, 24)]

    def read(token: str) -> tuple[list[tuple[float, str]], str]:
        after = key_of(token, "l", SHAPE)
        ordered = sorted(items, key=lambda i: (-i[0], i[1]))
        rows = [i for i in ordered if after is None or (-i[0], i[1]) > (-float(after[0]), after[1])]
        page = page_of(rows[:6], 5, "l", lambda i: i)
        items.append((100.0 + len(items), f"new{len(items)}"))  # one finishes meanwhile
        return page.items, page.next_token

    first = [(float(t), f"m{t}") for t in range(1, 24)]
    seen = list(follow(read))
    assert sorted(seen) == sorted(set(seen))  # nothing twice
    assert set(first) <= set(seen)  # nothing that was there is missed
    assert len(list(follow(read, limit=7))) == 7


def test_the_last_page_has_no_token() -> None:
    page = page_of([1, 2, 3], 3, "l", lambda i: (i,))
    assert page == paging.Page([1, 2, 3], "")
    page = page_of([1, 2, 3, 4], 3, "l", lambda i: (i,))
    assert page.items == [1, 2, 3] and key_of(page.next_token, "l", (int,)) == (3,)


def test_following_a_token_that_never_moves_stops() -> None:
    token = token_of("l", (1,))
    with pytest.raises(BadPageToken, match="its own next page"):
        list(follow(lambda t: ([1], token)))
