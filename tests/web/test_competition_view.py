"""The page's competition view in a real browser, against a real server running a
short competition (docs/examples/quick-competition.toml with a shorter schedule and
smaller finals): each phase shows as it comes, with its countdown; the finals'
progress shows while their results are held, and the final table, with a replay
link per finals match, only once the organiser releases them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import ORGANISER_KEY
from tests.ladder.conftest import MAMMAMIA, query

from .conftest import get_json, screenshot, wait_for, web_url

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "docs" / "examples" / "quick-competition.toml"
BOTS = {"random-1": "random", "greedy-1": "greedy", "counter-1": "counter"}
SCHEDULE = "registration = 0\nladder = 6\nfreeze = 16\nfinals = 18\nclosed = 300\n"
KEY = ("--organiser-key", ORGANISER_KEY)
FINALS = {"field": "3", "top": "2", "budget": "6", "tables": "3", "players": "[2, 3]"}


def short_competition(tmp_path: Path) -> Path:
    text = QUICK.read_text(encoding="utf-8")
    text = re.sub(r"\[schedule\]\n(.*?\n)\n", f"[schedule]\n{SCHEDULE}\n", text, flags=re.S)
    for key, value in FINALS.items():
        text = re.sub(rf"(?m)^{key} = [^#\n]*", f"{key} = {value} ", text)
    assert SCHEDULE in text and "budget = 6 " in text
    path = tmp_path / "short.toml"
    path.write_text(text, encoding="utf-8")
    return path


def phase_shown(page: Any, phase: str) -> bool:
    shown = page.get_by_test_id("competition-phase")
    return bool(shown.count() == 1 and shown.inner_text() == phase)


def test_the_competition_view_follows_the_phases(
    start_server: Any, ladder_bots: Any, page: Any, tmp_path: Path
) -> None:
    server = start_server(competition=short_competition(tmp_path), web_port=0)
    url = web_url(server)
    page.goto(url)
    nav = page.get_by_test_id("competition-nav")
    nav.wait_for()
    nav.click()
    wait_for(lambda: phase_shown(page, "registration"), 20, "the registration phase")
    countdown = page.locator("[data-testid=countdown][data-phase=ladder]")
    assert re.fullmatch(r"in 0:0\d", countdown.inner_text()), countdown.inner_text()
    screenshot(page, "competition-registration")

    ladder_bots(server.address, BOTS)
    wait_for(lambda: phase_shown(page, "ladder"), 30, "the ladder phase")
    assert page.get_by_test_id("competition-ladder").locator("a").get_attribute("href") == "#/"

    # The finals: progress for everyone, their results held.
    wait_for(lambda: phase_shown(page, "finals") or phase_shown(page, "closed"), 60, "the finals")
    assert page.get_by_test_id("finals-progress").count() == 1
    wait_for(lambda: phase_shown(page, "closed"), 150, "the finals' end")
    page.get_by_test_id("results-held").wait_for()
    public = get_json(url + "api/competition")[1]["competition"]
    assert public["held"] and not public["released"]
    assert public["standings"] == [] and public["matches"] == [] and public["final_reason"] == ""
    assert sorted(public["field"]) == sorted(BOTS)
    assert [s["phase"] for s in public["stamps"]] == public["phases"]
    assert page.get_by_test_id("final-table").count() == 0
    # Nor does a held finals match show by its id: not its replay, not its live view.
    finals_id = query(
        server.db_path, "SELECT match_id FROM competition_matches WHERE status = 'finished'"
    )[0][0]
    for route in ("replay", "live"):
        code, body, _ = get_json(f"{url}api/{route}/{finals_id}")
        assert code == 409 and "releases" in body["error"], (route, code, body)
    assert f"{public['played']} of at most 6" in page.get_by_test_id("finals-progress").inner_text()

    subprocess.run(
        [str(MAMMAMIA), "competition", "release", "--server", server.address, *KEY],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    rows = page.get_by_test_id("final-row")
    wait_for(lambda: rows.count() == len(BOTS), 20, "the released final table")
    released = get_json(url + "api/competition")[1]["competition"]
    assert released["released"] and released["final_reason"]
    assert [r["name"] for r in released["standings"]] == [
        rows.nth(i).locator("td").nth(1).inner_text() for i in range(len(BOTS))
    ]
    assert page.get_by_test_id("results-held").count() == 0
    links = page.get_by_test_id("finals-replay-link")
    assert links.count() == len(released["matches"]) == released["played"] > 0
    screenshot(page, "competition-released")

    # Each finals match's replay link opens its replay.
    finished = page.locator("[data-testid=finals-replay-link][data-status=finished]").first
    finished.click()
    page.get_by_test_id("replay").wait_for()
    assert get_json(f"{url}api/replay/{finals_id}")[0] == 200
    page.get_by_test_id("replay-caption").wait_for()


def test_a_server_without_a_competition_hides_the_view(start_server: Any, page: Any) -> None:
    server = start_server(web_port=0)
    url = web_url(server)
    assert get_json(url + "api/competition")[:2] == (200, {"competition": None})
    page.goto(url)
    page.get_by_test_id("standings").wait_for()
    page.wait_for_load_state("networkidle")
    assert page.get_by_test_id("competition-nav").is_hidden()
    page.goto(url + "#/competition")
    page.get_by_test_id("no-competition").wait_for()
