"""The web page shows the leagues: each bot's league in the standings, the leagues with
their bosses, who moved when, and a bot's own moves on its page (a real server with
leagues on, a real bot that rises past its bosses, a real browser); the ladder's
gauges leave the bosses out."""

from __future__ import annotations

from typing import Any

from .conftest import get_json, wait_for, web_url
from .test_metrics import metrics_port, scrape, value


def test_the_ladder_page_shows_each_bots_league_and_who_moved_when(
    start_server: Any, ladder_bots: Any, page: Any
) -> None:
    server = start_server(
        ladder_players="2",
        ladder_start_timeout=5,
        leagues="wood=random bronze=greedy top",
        league_sigmas=0,
        web_port=0,
        metrics_port=0,
    )
    url = web_url(server)
    ladder_bots(server.address, {"riser": "counter"})

    def risen() -> bool:
        rows = get_json(url + "api/standings")[1]["scopes"][0]["rows"]
        return any(r["name"] == "riser" and r["league"] == "top" for r in rows)

    wait_for(risen, 90, "the bot in the top league")
    # The bosses wait whenever they play no match: the gauges count the bot alone
    # (in the top league, with no one to play).
    metrics = f"http://127.0.0.1:{metrics_port(server)}/metrics"
    wait_for(
        lambda: value(scrape(metrics), "mammamia_ladder_bots_waiting") == 1,
        20,
        "one bot waiting, the bosses not counted",
    )

    page.goto(url)
    leagues = page.get_by_test_id("standing-league")
    wait_for(lambda: leagues.count() == 3, 20, "a league on each of the three lines")
    by_bot = dict(
        zip(
            page.get_by_test_id("bot-link").all_inner_texts(),
            leagues.all_inner_texts(),
            strict=True,
        )
    )
    assert by_bot == {"riser": "top", "wood-boss": "wood", "bronze-boss": "bronze"}
    assert "wood (boss wood-boss: random)" in page.get_by_test_id("leagues").inner_text()
    moves = page.get_by_test_id("move").all_inner_texts()
    assert len(moves) == 2
    assert "riser moved bronze → top" in moves[0] and "riser moved wood → bronze" in moves[1]

    page.goto(url + "#/bot/riser")
    mine = page.get_by_test_id("bot-moves")
    mine.wait_for()
    assert "moved wood → bronze" in mine.inner_text()
