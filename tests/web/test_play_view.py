"""The play view (#/play) in a real browser: a person plays whole games against the
built-in bots by clicking, to the final table and a working replay; a reload in the
middle takes the same seat at the same decision; every WebSocket message holds only
what the seat may know; the bots' ladder is unchanged."""

from __future__ import annotations

import functools
import json
import signal
import time
from typing import Any

from .conftest import get_json, screenshot, wait_for, web_url

SEAT_FACTS = {"name", "colour", "hand_size", "orders_in_hand", "waiter", "delivered", "strikes"}


def _listen(page: Any) -> list[dict[str, Any]]:
    """Returns the list every message the page receives on /api/play is appended to."""
    got: list[dict[str, Any]] = []

    def opened(ws: Any) -> None:
        if ws.url.endswith("/api/play"):
            ws.on("framereceived", lambda payload: got.append(json.loads(payload)))

    page.on("websocket", opened)
    return got


def _at(status: Any, decision: str) -> bool:
    """Returns whether the page shows the decision ``decision`` open."""
    return bool(status.count()) and status.get_attribute("data-decision") == decision


def _moved_on(page: Any, status: Any, decision: str) -> bool:
    """Returns whether the game ended or the page no longer shows ``decision`` open."""
    return bool(page.get_by_test_id("play-final").count()) or (
        status.get_attribute("data-decision") != decision
    )


def _play_to_the_end(page: Any, *, reload_after: int = 0, limit: float = 240) -> int:
    """Clicks the first option and Send at every decision until the final table;
    reloads the page once after ``reload_after`` answers. Returns the answers sent."""
    sent = 0
    status = page.get_by_test_id("play-status")
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if page.get_by_test_id("play-final").count():
            return sent
        decision = status.get_attribute("data-decision") if status.count() else None
        if not decision:
            time.sleep(0.05)
            continue
        if reload_after and sent == reload_after:
            page.reload()
            # The same seat, at the same decision.
            wait_for(
                functools.partial(_at, status, decision),
                20,
                "the same decision after the reload",
            )
            reload_after = 0
        page.get_by_test_id("play-option").first.click()
        assert "Your" in page.get_by_test_id("play-summary").inner_text()
        page.get_by_test_id("play-send").click()
        sent += 1
        wait_for(
            functools.partial(_moved_on, page, status, decision),
            20,
            "the answer to be taken",
        )
    raise AssertionError("the game did not end in time")


MESSAGE = {
    "type", "match", "seat", "status", "sequence", "view", "events", "decision",
    "time_bank", "now", "table", "hints", "final",
}  # fmt: skip
VIEW = {
    "players", "colours", "round", "phase", "to_act", "deciding", "supply", "oven",
    "revealed", "table", "used", "holder", "winners", "seats",
    "seat", "hand", "hand_orders", "waiter_cards",  # the seat's own cards
}  # fmt: skip


def _only_the_seat(messages: list[dict[str, Any]]) -> None:
    """Checks every message a game's page received: the seat's own cards (they add up
    to its public counts), the spectator's view, and nothing else."""
    assert {m["type"] for m in messages} <= {"seated", "seat", "hint", "refused"}
    seats = [m for m in messages if m["type"] == "seat"]
    assert seats and seats[-1]["final"] is not None
    seat = seats[0]["seat"]
    for m in seats:
        assert set(m) == MESSAGE and set(m["view"]) == VIEW
        view = m["view"]
        assert m["seat"] == seat and view["seat"] == seat
        for s in view["seats"]:
            assert set(s) == SEAT_FACTS  # counts of the others, never their cards
        assert len(view["hand"]) == 5
        if m["status"] == "waiting":
            # Not dealt yet (the seats' client seeds are awaited): no cards to show.
            assert not any(view["hand"]) and not view["hand_orders"] + view["waiter_cards"]
            continue
        own = view["seats"][seat]
        assert sum(view["hand"]) + len(view["hand_orders"]) == own["hand_size"]
        assert len(view["hand_orders"]) == own["orders_in_hand"]
        assert len(view["waiter_cards"]) == own["waiter"]
        colour = view["colours"][seat]
        assert all(o.startswith(colour + "-") for o in view["hand_orders"] + view["waiter_cards"])


def _game(page: Any, url: str, players: int, reload_after: int = 0) -> None:
    messages = _listen(page)
    page.goto(url + "#/play")
    page.evaluate("sessionStorage.clear()")
    page.goto(url + "#/play")
    page.get_by_test_id("play-players").select_option(str(players))
    assert page.get_by_test_id("play-opponent").count() == players - 1
    page.get_by_test_id("play-start").click()
    assert _play_to_the_end(page, reload_after=reload_after) > 0
    final = page.get_by_test_id("play-final")
    assert final.get_by_test_id("scores").locator("tbody tr").count() == players
    _only_the_seat(messages)
    page.get_by_test_id("play-replay").click()
    wait_for(lambda: page.get_by_test_id("replay-caption").count(), 20, "the replay")


def test_two_and_four_player_games_by_clicking(start_server: Any, page: Any) -> None:
    server = start_server(web_port=0)
    url = web_url(server)
    standings = get_json(url + "api/standings")[1]
    _game(page, url, 2, reload_after=2)
    _game(page, url, 4)
    assert get_json(url + "api/standings")[1] == standings


def test_the_play_view_fits_a_phone(start_server: Any, browser: Any) -> None:
    server = start_server(web_port=0)
    url = web_url(server)
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        page.goto(url + "#/play")
        # The start fits too, with a ladder bot's name field shown.
        page.get_by_test_id("play-players").select_option("5")
        page.get_by_test_id("play-opponent").first.select_option("ladder")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.get_by_test_id("play-players").select_option("2")
        page.get_by_test_id("play-start").focus()
        page.keyboard.press("Enter")  # by keyboard
        page.get_by_test_id("play-option").first.wait_for()
        # The first option of a new decision has the focus; Enter chooses, and Send,
        # focused then, sends.
        wait_for(
            lambda: page.evaluate("document.activeElement.dataset.testid") == "play-option",
            10,
            "the first option to take the focus",
        )
        page.keyboard.press("Enter")
        assert "Your" in page.get_by_test_id("play-summary").inner_text()
        assert page.evaluate("document.activeElement.dataset.testid") == "play-send"
        status = page.get_by_test_id("play-status")
        asked = status.get_attribute("data-decision") or ""
        page.keyboard.press("Enter")
        wait_for(
            functools.partial(_moved_on, page, status, asked), 20, "the answer sent by keyboard"
        )
        page.get_by_test_id("play-option").first.wait_for()
        # A hint: the built-in bot's answer from this seat's decision, marked.
        page.get_by_test_id("play-hint").click()
        assert "would play" in page.get_by_test_id("play-hint-text").inner_text()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, width
        screenshot(page, "play-phone")
    finally:
        context.close()


def _rated(url: str) -> int:
    """Returns the ladder's rated matches so far."""
    return int(get_json(url + "api/standings")[1]["scopes"][0]["rated"])


def _quiet(url: str) -> bool:
    """Returns whether no ladder match is running and every ended one is rated."""
    matches = get_json(url + "api/matches")[1]["matches"]
    return not any(m["status"] == "running" for m in matches) and _rated(url) == len(
        [m for m in matches if m["status"] == "finished"]
    )


def test_a_ladder_bot_by_name_or_a_clear_refusal(
    start_server: Any, ladder_bots: Any, page: Any
) -> None:
    server = start_server(ladder_players="2", ladder_start_timeout=2, web_port=0)
    url = web_url(server)
    # Two bots play rated matches; then one leaves, and the other waits alone, rated.
    ladder_bots(server.address, {"solo": "greedy"})
    rival = ladder_bots(server.address, {"rival": "random"})["rival"]
    wait_for(lambda: _rated(url) >= 2, 90, "two rated ladder matches")
    rival.send_signal(signal.SIGINT)
    rival.wait(timeout=60)
    wait_for(lambda: _quiet(url), 60, "the ladder's matches to end")
    standings = get_json(url + "api/standings")[1]
    assert {r["name"] for r in standings["scopes"][0]["rows"]} == {"solo", "rival"}
    messages = _listen(page)

    def start(name: str) -> None:
        page.get_by_test_id("play-opponent").select_option("ladder")
        page.get_by_test_id("play-opponent-name").fill(name)
        page.get_by_test_id("play-start").click()

    # A name that is not entered: the page says so, and offers a new start.
    page.goto(url + "#/play")
    start("ghost")
    assert "not entered" in page.get_by_test_id("error").inner_text()
    page.get_by_role("link", name="Start a new game").click()
    start("solo")
    assert _play_to_the_end(page) > 0
    names = page.get_by_test_id("play-final").get_by_test_id("scores").inner_text()
    assert "solo" in names
    _only_the_seat(messages)
    # The ladder bot's rating, and every line of the standings, are as they were, and
    # the person's match is not one of the ladder's.
    assert get_json(url + "api/standings")[1] == standings
    match_id = page.get_by_test_id("play-status").get_attribute("data-match")
    listed = get_json(url + "api/matches")[1]["matches"]
    assert match_id and match_id not in {m["match"] for m in listed}


def test_a_game_for_the_people_table_by_clicking(start_server: Any, page: Any) -> None:
    server = start_server(web_port=0, people_table=True)
    url = web_url(server)
    standings = get_json(url + "api/standings")[1]
    page.goto(url + "#/play")
    page.evaluate("sessionStorage.clear()")
    page.get_by_test_id("play-name").fill("ada")
    page.get_by_test_id("play-for-table").check()
    assert "Nobody" in page.get_by_test_id("people-table").inner_text()
    page.get_by_test_id("play-start").click()
    page.get_by_test_id("play-option").first.wait_for()
    assert "people's table" in page.get_by_test_id("play-status").inner_text()
    assert page.get_by_test_id("play-hint").count() == 0  # no hints in a rated game
    assert _play_to_the_end(page) > 0
    page.get_by_role("link", name="Play again").click()
    rows = page.get_by_test_id("people-row")
    rows.first.wait_for()
    assert rows.count() == 1 and "ada" in rows.first.inner_text()
    assert page.get_by_test_id("people-opponent").count() == 1
    screenshot(page, "people-table")
    assert get_json(url + "api/standings")[1] == standings
