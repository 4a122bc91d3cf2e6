"""The web page shows discipline: a suspended bot is marked in the standings and its
page says why; a voided match is listed as voided (a real server, real bots, a real
browser, the changes made with `mammamia admin`)."""

from __future__ import annotations

from typing import Any

from tests.admin.test_discipline import admin

from .conftest import get_json, wait_for, web_url

BOTS = {"random-w": "random", "greedy-w": "greedy", "counter-w": "counter"}


def test_a_suspended_bot_and_a_voided_match_show_on_the_page(
    start_server: Any, ladder_bots: Any, page: Any
) -> None:
    server = start_server(ladder_players="2-3", ladder_start_timeout=2, web_port=0)
    url = web_url(server)
    ladder_bots(server.address, BOTS)
    wait_for(
        lambda: (
            (s := get_json(url + "api/standings")[1]["scopes"][0]["rows"])
            and len(s) == len(BOTS)
            # Each bot has two rated matches, so voiding one leaves every row standing.
            and all(r["games"] >= 2 for r in s)
        ),
        90,
        "a standings row per bot, each with two matches",
    )
    done = admin(server.address, "suspend", "random-w", "--reason", "under review")
    assert done.returncode == 0, done.stderr
    finished = [m for m in get_json(url + "api/matches")[1]["matches"] if m["status"] == "finished"]
    done = admin(server.address, "void", finished[-1]["match"], "--reason", "a fault")
    assert done.returncode == 0, done.stderr

    rows = {r["name"]: r for r in get_json(url + "api/standings")[1]["scopes"][0]["rows"]}
    assert rows["random-w"]["suspended"] == "under review"
    assert rows["greedy-w"]["suspended"] is None
    bot = get_json(url + "api/bots/random-w")[1]
    assert bot["suspended"]["reason"] == "under review" and bot["suspended"]["by"] == "organiser"
    listed = {m["match"]: m for m in get_json(url + "api/matches?limit=200")[1]["matches"]}
    assert listed[finished[-1]["match"]]["voided"] == "a fault"

    page.goto(url)
    marked = page.get_by_test_id("suspended")
    wait_for(lambda: marked.count() == 1, 20, "one bot marked suspended")
    page.goto(url + "#/bot/random-w")
    notice = page.get_by_test_id("bot-suspended")
    notice.wait_for()
    assert "under review" in notice.inner_text()
    page.goto(url + "#/matches")
    page.locator("[data-testid=match-link][data-status=voided]").first.wait_for()
