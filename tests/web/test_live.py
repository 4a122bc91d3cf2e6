"""A running match followed live in a real browser: the page updates without a
reload, ends on the final scores, and never shows a card the spectator view hides
(its text and its JSON are checked against Spectate.Watch)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .conftest import get_json, screenshot, wait_for, web_url

SLOW = f"{Path(__file__).with_name('slow_bot.py')}:SlowBot"
ORDER_ID = re.compile(
    r"\b(?:red|yellow|brown|green|purple)-(?:salami|pineapple|mushroom|pepper"
    r"|olive|mixed|bombastica|minimale|monotoni)\b"
)


def _watched_orders(address: str, match_id: str) -> set[str]:
    """Returns every order id in the first message of Spectate.Watch (its snapshot,
    with the whole public history)."""
    with grpc.insecure_channel(address) as channel:
        stream = pb_grpc.SpectateStub(channel).Watch(pb.WatchRequest(match_id=match_id), timeout=10)
        first = next(iter(stream))
        stream.cancel()
    return set(ORDER_ID.findall(str(first)))


def test_live_match_updates_and_shows_only_public_cards(
    start_server: Any, ladder_bots: Any, page: Any
) -> None:
    server = start_server(
        ladder_players="2-2", ladder_start_timeout=2, ladder_concurrency=1, web_port=0
    )
    url = web_url(server)
    ladder_bots(server.address, {"slow-1": SLOW, "slow-2": SLOW})

    def live_match() -> str | None:
        listed = get_json(url + "api/matches")[1]["matches"]
        return next((m["match"] for m in listed if m["live"]), None)

    match_id = wait_for(live_match, 30, "a live match in the list")

    # The list links to the live view; the view moves on without a reload.
    page.goto(url + "#/matches")
    page.locator("[data-testid=match-link][data-status=live]").first.click()
    status = page.get_by_test_id("live-status")
    wait_for(lambda: status.get_attribute("data-sequence"), 20, "the first live message")
    before = int(status.get_attribute("data-sequence") or 0)
    page.evaluate("window.__same_page = true")
    wait_for(
        lambda: int(status.get_attribute("data-sequence") or 0) > before + 3,
        30,
        "the live view to move on",
    )
    assert page.evaluate("window.__same_page") is True  # no reload
    screenshot(page, "live")

    # Public cards only, while the match runs: every order the page or its JSON names
    # is one the spectator's stream has shown (public information only grows).
    shown = page.inner_text("body")
    code, data, text = get_json(url + f"api/live/{match_id}")
    assert code == 200 and data["final"] is None, data
    _, _, listed = get_json(url + "api/matches")
    code, _, replay = get_json(url + f"api/replay/{match_id}")
    assert code == 409  # no record (every hand) while it runs
    watched = _watched_orders(server.address, match_id)
    for where, content in (
        ("page", shown),
        ("live JSON", text),
        ("match list", listed),
        ("replay answer", replay),
    ):
        hidden = set(ORDER_ID.findall(content)) - watched
        assert not hidden, f"the {where} shows orders the spectator view hides: {hidden}"
    for seat in data["view"]["seats"]:
        assert set(seat) == {
            "name",
            "colour",
            "hand_size",
            "orders_in_hand",
            "waiter",
            "delivered",
            "strikes",
        }
    assert not {"hand", "hand_orders", "legal"} & set(data["view"])

    # The end: final scores, and a link to the replay.
    page.get_by_test_id("scores").wait_for(timeout=90_000)
    assert status.get_attribute("data-status") == "finished"
    page.get_by_test_id("live-replay").click()
    page.get_by_test_id("replay-position").wait_for()
