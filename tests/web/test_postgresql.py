"""The web page of a server on PostgreSQL (``--db postgresql://...``), in a real
browser: every view loads, with no 503 from its JSON and no console error. The page
reads through the storage layer, so it answers on PostgreSQL as on a file."""

from __future__ import annotations

from typing import Any

from server.db.people import PeopleResult, PeopleStore

from .conftest import get_json, wait_for, web_url

BOTS = {"random-1": "random", "greedy-1": "greedy", "counter-1": "counter"}


def test_every_view_loads_on_postgresql(
    start_server: Any, ladder_bots: Any, postgres_url: str, page: Any
) -> None:
    server = start_server(
        db=postgres_url, ladder_players="2-3", ladder_start_timeout=2, web_port=0, people_table=True
    )
    url = web_url(server)
    ladder_bots(server.address, BOTS)
    wait_for(
        lambda: (
            (s := get_json(url + "api/standings")[1]["scopes"][0]["rows"])
            and len(s) == len(BOTS)
            and all(r["games"] >= 2 for r in s)
        ),
        90,
        "two rated games of every bot",
    )

    # The JSON behind every view answers (no 503: the database is read).
    status, standings, _ = get_json(url + "api/standings")
    assert status == 200 and len(standings["scopes"]) >= 2, standings
    status, bot, text = get_json(url + "api/bots/greedy-1")
    assert status == 200 and bot["overall"]["games"] >= 2, text
    assert bot["history"] and bot["opponents"] and bot["matches"], text
    status, listed, text = get_json(url + "api/matches?limit=50")
    assert status == 200 and listed["matches"], text
    finished = [m for m in listed["matches"] if m["status"] == "finished"]
    assert finished and finished[0]["delivered"] is not None, text
    status, replay, text = get_json(url + f"api/replay/{finished[0]['match']}")
    assert status == 200 and replay["steps"], text

    # The views, each as a browser shows it.
    page.goto(url)
    rows = page.get_by_test_id("standings-row")
    wait_for(lambda: rows.count() == len(BOTS), 20, "a standings row per bot")
    players = standings["scopes"][1]["players"]
    page.goto(url + f"#/?players={players}")
    wait_for(lambda: rows.count() >= 1, 20, f"the standings of {players}-player matches")

    page.goto(url + "#/bot/greedy-1")
    page.get_by_test_id("rating-plot").wait_for()
    assert page.get_by_test_id("opponents").locator("tbody tr").count() >= 1

    page.goto(url + "#/matches?bot=greedy-1")
    page.locator("[data-testid=match-link][data-status=finished]").first.wait_for()

    page.goto(url + f"#/replay/{finished[0]['match']}")
    position = page.get_by_test_id("replay-position")
    position.wait_for()
    assert position.inner_text().startswith("1 / ")
    page.get_by_test_id("replay-next").click()
    assert position.inner_text().startswith("2 / ")

    # A running ladder match's live view (the ladder keeps matches going).
    live = wait_for(
        lambda: next(
            (m for m in get_json(url + "api/matches?limit=20")[1]["matches"] if m["live"]), None
        ),
        30,
        "a running ladder match",
    )
    page.goto(url + f"#/live/{live['match']}")
    page.get_by_test_id("live-status").wait_for()

    # The people's table: a result stored on PostgreSQL, read back and shown.
    store = PeopleStore(postgres_url)
    try:
        result = PeopleResult("p1", 1.0, (("person", "ada"), ("builtin", "eager")), (1, 2))
        assert store.add(result) and not store.add(result)  # once
    finally:
        store.close()
    status, table, text = get_json(url + "api/people")
    assert status == 200 and table["matches"] == 1, text
    assert [p["name"] for p in table["people"]] == ["ada"], text
    page.goto(url + "#/play")
    page.get_by_test_id("people-row").first.wait_for()
