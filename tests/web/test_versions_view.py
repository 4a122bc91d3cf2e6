"""A bot's versions on the web page, in a real browser against a real server: the
bot's page lists both versions of a bot entered one after the other, each with its
own rating and matches, and the ladder page shows each bot by its best version or,
switched, by its newest."""

from __future__ import annotations

import signal
from typing import Any

from .conftest import get_json, screenshot, wait_for, web_url


def _games(url: str, version: str) -> int:
    status, bot, _ = get_json(url + "api/bots/mine")
    if status != 200:
        return 0
    return sum(v["games"] for v in bot["versions"] if v["version"] == version)


def test_the_bot_page_lists_its_versions_and_the_standings_switch(
    start_server: Any, ladder_bots: Any, page: Any
) -> None:
    server = start_server(ladder_players="2", ladder_start_timeout=2, web_port=0)
    url = web_url(server)
    ladder_bots(server.address, {"rival": "random"})
    first = ladder_bots(server.address, {"mine": "greedy"}, "--version", "v1")["mine"]
    wait_for(lambda: _games(url, "v1") >= 2, 90, "two games of v1")
    first.send_signal(signal.SIGINT)
    first.wait(timeout=60)
    ladder_bots(server.address, {"mine": "counter"}, "--version", "v2")
    wait_for(lambda: _games(url, "v2") >= 2, 90, "two games of v2")

    # The API: the newest version on request, the best by default, saying which.
    _, best, _ = get_json(url + "api/standings")
    _, newest, _ = get_json(url + "api/standings?by=newest")
    assert best["by"] == "best" and newest["by"] == "newest"
    mine = {r["name"]: r for r in newest["scopes"][0]["rows"]}["mine"]
    assert mine["version"] == "v2" and mine["versions"] == 2

    # The bot's page: a row per version, side by side.
    page.goto(url + "#/bot/mine")
    rows = page.get_by_test_id("version-row")
    wait_for(lambda: rows.count() == 2, 20, "a row per version")
    assert [rows.nth(i).locator("td").first.inner_text() for i in range(2)] == ["v1", "v2"]
    screenshot(page, "bot-versions")

    # The ladder page: switched to the newest version, the line shows v2 and says so.
    page.goto(url + "#/?by=newest")
    page.get_by_test_id("standings-row").first.wait_for()
    assert "newest" in page.get_by_test_id("standings-by-note").inner_text()
    versions = page.get_by_test_id("standing-version").all_inner_texts()
    assert any(v.startswith("v2") for v in versions), versions
    page.get_by_test_id("by-best").click()
    wait_for(
        lambda: "best" in page.get_by_test_id("standings-by-note").inner_text() or None,
        20,
        "the standings by best version",
    )
