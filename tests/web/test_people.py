"""The people's table (``mammamia serve --people-table``): a person's games played for
it are rated by the ladder's model under the name they gave, kept apart from the bots'
standings, without hints; games not played for it count nothing (a server without
the table: tests/web/test_play_socket.py). Also: the hint is refused in a rated
(ladder or competition) match."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp

from server.db.matches import Storage
from server.db.people import BUILTIN, LADDER, PERSON, PeopleResult
from server.runners import Runners
from server.web import people, play
from tests.server.clocks import ManualClock

from .conftest import get_json, web_url


def test_the_table_ranks_people_by_the_ladders_model_and_bots_apart() -> None:
    won = PeopleResult("m1", 1.0, ((PERSON, "ada"), (BUILTIN, "random")), (1, 2))
    lost = PeopleResult("m2", 2.0, ((PERSON, "bob"), (LADDER, "random")), (2, 1))
    tied = PeopleResult(
        "m3", 3.0, ((PERSON, "ada"), (PERSON, "bob"), (BUILTIN, "eager")), (1, 1, 3)
    )
    table = people.table_json([won, lost, tied])
    assert table["matches"] == 3
    assert [(p["rank"], p["name"], p["games"], p["wins"]) for p in table["people"]] == [
        (1, "ada", 2, 2),
        (2, "bob", 2, 1),
    ]
    # A built-in bot and a ladder bot of the same name are two lines, both unranked.
    assert sorted((o["kind"], o["name"]) for o in table["opponents"]) == [
        (BUILTIN, "eager"),
        (BUILTIN, "random"),
        (LADDER, "random"),
    ]
    assert all(o["rank"] is None for o in table["opponents"])
    ada = table["people"][0]
    assert ada["low"] < ada["mu"] < ada["high"] and ada["rating"] < ada["mu"]
    # A replay: the same results give the same table.
    assert people.table_json([won, lost, tied]) == table


async def _game(url: str, start: dict[str, Any]) -> list[dict[str, Any]]:
    """Returns every message of a game played by taking the first option, asking for a
    hint at the first decision."""
    got: list[dict[str, Any]] = []
    ws_url = url.replace("http://", "ws://") + "api/play"
    asked = False
    async with aiohttp.ClientSession() as session, session.ws_connect(ws_url) as ws:
        await ws.send_str(json.dumps({"type": "start", "players": 2, **start}))
        async for msg in ws:
            data = json.loads(msg.data)
            got.append(data)
            if data["type"] == "refused" and not asked:
                return got
            if data["type"] != "seat":
                continue
            if data["final"] is not None:
                return got
            decision = data["decision"]
            if decision is None:
                continue
            if not asked:
                asked = True
                await ws.send_str(json.dumps({"type": "hint", "bot": "eager"}))
            answer = {"type": "answer", "decision": decision["id"], "option": 0}
            await ws.send_str(json.dumps(answer))
    raise AssertionError("the socket closed before the game ended")


def test_games_for_the_people_table_are_rated_apart_and_offer_no_hint(
    start_server: Any,
) -> None:
    server = start_server(web_port=0, people_table=True)
    url = web_url(server)
    standings = get_json(url + "api/standings")[1]
    assert get_json(url + "api/people")[1] == {
        "enabled": True,
        "matches": 0,
        "people": [],
        "opponents": [],
    }
    refused = asyncio.run(_game(url, {"table": True}))
    assert refused[-1]["type"] == "refused" and "name" in refused[-1]["error"]

    counted = asyncio.run(_game(url, {"table": True, "name": "ada", "opponents": ["eager"]}))
    seats = [m for m in counted if m["type"] == "seat"]
    assert all(m["table"] and not m["hints"] for m in seats)
    hints = [m for m in counted if m["type"] in ("hint", "refused")]
    assert hints and hints[0]["type"] == "refused" and "no hints" in hints[0]["error"]
    assert seats[-1]["final"]["status"] == "finished"

    # Not played for the table: hints, and nothing counted.
    free = asyncio.run(_game(url, {"name": "ada"}))
    assert [m["type"] for m in free if m["type"] in ("hint", "refused")] == ["hint"]
    assert not any(m["table"] for m in free if m["type"] == "seat")

    table = get_json(url + "api/people")[1]
    assert table["matches"] == 1
    assert [(p["name"], p["games"]) for p in table["people"]] == [("ada", 1)]
    assert [(o["kind"], o["name"]) for o in table["opponents"]] == [(BUILTIN, "eager")]
    assert get_json(url + "api/standings")[1] == standings


def test_no_hint_in_a_rated_match(tmp_path: Path) -> None:
    async def go() -> None:
        storage = Storage(tmp_path / "arena.db")
        try:
            runners = Runners(storage, clock=ManualClock(), journal=False)
            for ladder in (True, False):
                runner = runners.create_match(2, seed=3, deadline_ms=60_000, ladder=ladder)
                runner.join(0)
                runner.join(1)
                decision = runner.match.decision
                assert decision is not None
                got = play.hint(runner, decision.seat, "eager")
                if ladder:
                    assert got == {"type": "refused", "error": "no hints in a rated match"}
                else:
                    assert got["type"] == "hint" and got["decision"] == decision.id
                    assert 0 <= got["option"] < len(decision.options)
                message, _ = play.message(runner, decision.seat, 0)
                assert message["hints"] is not ladder
        finally:
            storage.close()

    asyncio.run(go())
