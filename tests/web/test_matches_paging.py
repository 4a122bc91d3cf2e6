"""GET /api/matches pages through a ladder of more than 500 matches with page
tokens: every match once, and a token it did not give refused with 400."""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

from bench.ladder_reads import fill

from .conftest import get_json, web_url


def test_the_match_list_pages_to_its_end(start_server: Any, tmp_path: Path) -> None:
    directory = tmp_path / "server"
    directory.mkdir()
    fill(directory / "arena.db", matches=620, bots=10)
    server = start_server(directory, web_port=0)
    url = web_url(server)

    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        query = urllib.parse.urlencode({"limit": 100, "page_token": token})
        status, body, _ = get_json(url + "api/matches?" + query)
        assert status == 200, body
        assert len(body["matches"]) <= 100
        seen += [m["match"] for m in body["matches"]]
        pages += 1
        token = body["next_page_token"]
        if not token:
            break
    assert pages == 7
    assert len(seen) == len(set(seen)) == 620
    assert seen == sorted(seen, reverse=True)  # newest first: fill's ids grow with time

    # A bot's matches page the same way; a token is bound to its filter.
    status, first, _ = get_json(url + "api/matches?bot=bot-001&limit=5")
    assert status == 200 and len(first["matches"]) == 5 and first["next_page_token"]
    other = urllib.parse.urlencode({"bot": "bot-002", "page_token": first["next_page_token"]})
    status, refused, _ = get_json(url + "api/matches?" + other)
    assert status == 400 and "page_token '" in refused["error"]
    status, refused, _ = get_json(url + "api/matches?page_token=nonsense")
    assert status == 400 and "'nonsense'" in refused["error"]
