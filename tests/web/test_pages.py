"""The web page in a real browser against a real server with a ladder of built-in
bots: the standings fill, a bot's page plots its rating, the match list links to
replays, and the replay steps forward and back."""

from __future__ import annotations

import re
from typing import Any

from .conftest import get_json, screenshot, wait_for, web_url

BOTS = {"random-1": "random", "greedy-1": "greedy", "counter-1": "counter"}


def test_ladder_bot_matches_and_replay(start_server: Any, ladder_bots: Any, page: Any) -> None:
    server = start_server(ladder_players="2-3", ladder_start_timeout=2, web_port=0)
    url = web_url(server)
    ladder_bots(server.address, BOTS)
    # Every bot rated at least twice (so that each has a plot), in every scope shown.
    wait_for(
        lambda: (
            (s := get_json(url + "api/standings")[1]["scopes"][0]["rows"])
            and len(s) == len(BOTS)
            and all(r["games"] >= 3 for r in s)
        ),
        90,
        "three games of every bot",
    )

    # The ladder: a row per bot, each linking to its page.
    page.goto(url)
    rows = page.get_by_test_id("standings-row")
    wait_for(lambda: rows.count() == len(BOTS), 20, "a standings row per bot")
    names = {page.get_by_test_id("bot-link").nth(i).inner_text() for i in range(len(BOTS))}
    assert names == set(BOTS)
    screenshot(page, "ladder")

    # A bot: its rating plot and its results.
    page.get_by_test_id("bot-link").first.click()
    page.get_by_test_id("rating-plot").wait_for()
    assert page.get_by_test_id("by-players").locator("tbody tr").count() >= 1
    assert page.get_by_test_id("opponents").locator("tbody tr").count() >= 1
    screenshot(page, "bot")

    # The matches, filtered by a bot; a finished one opens its replay.
    page.goto(url + "#/matches?bot=greedy-1")
    links = page.locator("[data-testid=match-link][data-status=finished]")
    links.first.wait_for()
    for text in page.get_by_test_id("match-list").locator("li").all_inner_texts()[:10]:
        assert "greedy-1" in text
    page.goto(url + "#/matches")
    links.first.wait_for()
    screenshot(page, "matches")
    links.first.click()

    # The replay: next and previous move the position; so do the arrow keys.
    position = page.get_by_test_id("replay-position")
    position.wait_for()
    first = position.inner_text()
    match = re.fullmatch(r"1 / (\d+)", first)
    assert match, first
    total = int(match[1])
    page.get_by_test_id("replay-next").click()
    assert position.inner_text() == f"2 / {total}"
    page.get_by_test_id("replay-next").click()
    page.get_by_test_id("replay-next").click()
    assert position.inner_text() == f"4 / {total}"
    page.get_by_test_id("replay-prev").click()
    assert position.inner_text() == f"3 / {total}"
    page.keyboard.press("ArrowRight")
    assert position.inner_text() == f"4 / {total}"
    page.get_by_test_id("replay-last").click()
    assert position.inner_text() == f"{total} / {total}"
    assert page.get_by_test_id("scores").is_visible()
    screenshot(page, "replay-end")

    # A link opens the replay at a step, with every hand shown.
    replay_url = page.url.split("#")[0] + page.url[page.url.index("#") :].split("?")[0]
    page.goto(replay_url + "?step=60&view=all")
    wait_for(lambda: position.inner_text() == f"60 / {total}", 10, "step 60")
    assert page.get_by_test_id("oven").locator(".card").count() > 0
    screenshot(page, "replay")

    # A phone's width: the ladder still reads.
    page.set_viewport_size({"width": 390, "height": 760})
    page.goto(url)
    wait_for(lambda: rows.count() == len(BOTS), 20, "the standings on a phone")
    screenshot(page, "ladder-phone")
