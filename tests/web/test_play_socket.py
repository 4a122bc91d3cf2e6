"""A person's seat over the page's WebSocket (/api/play), against a real server: a
whole game to its end, a reconnect that takes the same seat at the same decision,
messages that hold only what the seat may know, and no effect on the ladder."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp

from .conftest import get_json, wait_for, web_url


async def _play(
    url: str, players: int, *, drop_after: int = 0, opponents: list[Any] | None = None
) -> list[dict[str, Any]]:
    """Returns every message of a game played by always taking the first option
    against ``opponents`` (None: the server's default); after ``drop_after`` answers
    the socket is closed and the seat taken again by its token."""
    got: list[dict[str, Any]] = []
    ws_url = url.replace("http://", "ws://") + "api/play"
    answered = 0
    token = ""
    resume_at: str | None = None
    history: dict[int, dict[str, Any]] = {}  # the public entries received, by sequence
    async with aiohttp.ClientSession() as session:
        first: dict[str, Any] = {"type": "start", "players": players}
        if opponents is not None:
            first["opponents"] = opponents
        while True:
            async with session.ws_connect(ws_url) as ws:
                await ws.send_str(json.dumps(first))
                dropped = False
                async for msg in ws:
                    data = json.loads(msg.data)
                    got.append(data)
                    assert data["type"] != "refused", data
                    if data["type"] == "seated":
                        token = data["token"]
                        continue
                    history.update({e["sequence"]: e for e in data["events"]})
                    if data["final"] is not None:
                        return got
                    decision = data["decision"]
                    if resume_at is not None:
                        # The same seat, at the same open decision.
                        assert decision is not None and decision["id"] == resume_at
                        resume_at = None
                    if decision is None:
                        continue
                    _same_as_a_spectator(url, data, history)
                    if drop_after and answered == drop_after:
                        resume_at = decision["id"]
                        drop_after = 0
                        dropped = True
                        break
                    await ws.send_str(
                        json.dumps({"type": "answer", "decision": decision["id"], "option": 0})
                    )
                    answered += 1
                assert dropped, "the socket closed before the game ended"
            first = {"type": "resume", "token": token, "after": 0}


OWN = {"seat", "hand", "hand_orders", "waiter_cards"}


def _same_as_a_spectator(
    url: str, data: dict[str, Any], history: dict[int, dict[str, Any]]
) -> None:
    """Checks a message asking the seat to decide against the spectator's view of the
    match at that moment (it waits for the seat): the message holds what a spectator
    sees and the seat's own cards, nothing else."""
    code, public, _ = get_json(url + f"api/live/{data['match']}?after=0")
    assert code == 200, public
    assert public["sequence"] == data["sequence"]
    assert {k: v for k, v in data["view"].items() if k not in OWN} == public["view"]
    assert [history[k] for k in sorted(history)] == public["events"]
    own = data["view"]["colours"][data["seat"]]
    for order in data["view"]["hand_orders"] + data["view"]["waiter_cards"]:
        assert order.startswith(own + "-"), order


def _cards_of_others(messages: list[dict[str, Any]]) -> None:
    for m in messages:
        if m["type"] != "seat":
            continue
        assert m["seat"] == 0 and m["view"]["seat"] == 0
        for s in m["view"]["seats"]:
            # The spectator's facts of each seat: counts, never cards.
            assert set(s) == {
                "name",
                "colour",
                "hand_size",
                "orders_in_hand",
                "waiter",
                "delivered",
                "strikes",
            }


def test_a_person_plays_a_whole_game_and_resumes_after_a_drop(start_server: Any) -> None:
    server = start_server(web_port=0)
    url = web_url(server)
    before = get_json(url + "api/standings")[1]
    messages = asyncio.run(_play(url, 2, drop_after=3))
    _cards_of_others(messages)
    final = messages[-1]["final"]
    assert final["status"] == "finished"
    assert sorted(final["ranks"]) == sorted(final["ranks"]) and len(final["ranks"]) == 2
    match_id = messages[-1]["match"]
    code, replay, _ = get_json(url + f"api/replay/{match_id}")
    assert code == 200, replay
    # Unrated: the ladder's standings are as they were.
    assert get_json(url + "api/standings")[1] == before


def test_a_seat_that_does_not_answer_is_played_by_the_default(start_server: Any) -> None:
    server = start_server(web_port=0)
    ws_url = web_url(server).replace("http://", "ws://") + "api/play"

    async def go() -> dict[str, Any]:
        start = {"type": "start", "players": 2, "deadline_ms": 500, "time_bank_ms": 300}
        async with aiohttp.ClientSession() as session, session.ws_connect(ws_url) as ws:
            await ws.send_str(json.dumps(start))
            async for msg in ws:
                data = json.loads(msg.data)
                if data["type"] != "seat":
                    continue
                late = [e for e in data["events"] if e["kind"] == "defaulted"]
                if late:
                    return dict(late[0])
                if data["decision"] is not None:
                    # The deadline, then the bank: 0.8 s after it was asked.
                    assert data["decision"]["default_at"] - data["decision"]["deadline"] <= 0.3
            raise AssertionError("no default came")

    late = asyncio.run(asyncio.wait_for(go(), 30))
    assert late["seat"] == 0


def test_a_bad_start_is_refused(start_server: Any) -> None:
    server = start_server(web_port=0)
    ws_url = web_url(server).replace("http://", "ws://") + "api/play"

    async def go() -> dict[str, Any]:
        async with aiohttp.ClientSession() as session, session.ws_connect(ws_url) as ws:
            await ws.send_str(json.dumps({"type": "start", "players": 9}))
            return dict(json.loads((await ws.receive()).data))

    assert asyncio.run(go())["type"] == "refused"
    # A server without a people's table plays nothing for it.
    url = web_url(server)
    assert get_json(url + "api/people")[1] == {"enabled": False}
    refused = asyncio.run(_start(url, {"type": "start", "players": 2, "table": True, "name": "a"}))
    assert refused["type"] == "refused" and "no people's table" in refused["error"]


async def _start(url: str, request: dict[str, Any]) -> dict[str, Any]:
    """Returns the server's first reply to a start message."""
    ws_url = url.replace("http://", "ws://") + "api/play"
    async with aiohttp.ClientSession() as session, session.ws_connect(ws_url) as ws:
        await ws.send_str(json.dumps(request))
        return dict(json.loads((await ws.receive()).data))


def test_an_entered_ladder_bot_plays_a_person_unrated(
    start_server: Any, ladder_bots: Any, tmp_path: Path
) -> None:
    # Two seats a ladder match: the one bot entered waits alone, and may be asked for.
    server = start_server(ladder_players="2", web_port=0)
    url = web_url(server)
    ladder_bots(server.address, {"solo": "greedy"})
    wait_for(lambda: '"ladder_bot_entered"' in server.logs(), 60, "the bot's entry")
    before = get_json(url + "api/standings")[1]

    # A name not entered is refused, saying why; so is a bot asked for twice.
    refused = asyncio.run(
        _start(url, {"type": "start", "players": 2, "opponents": [{"ladder": "ghost"}]})
    )
    assert refused["type"] == "refused" and "not entered" in refused["error"], refused
    twice = [{"ladder": "solo"}, {"ladder": "solo"}]
    refused = asyncio.run(_start(url, {"type": "start", "players": 3, "opponents": twice}))
    assert refused["type"] == "refused" and "one seat" in refused["error"], refused

    messages = asyncio.run(_play(url, 3, opponents=["eager", {"ladder": "solo"}]))
    last = messages[-1]
    assert last["final"]["status"] == "finished"
    assert [s["name"] for s in last["view"]["seats"]][1:] == ["eager-1", "solo"]
    match_id = last["match"]
    # The bot was told its seat through its entry and played it itself.
    bot_log = (tmp_path / "bots" / "solo.log").read_text()
    assert match_id in bot_log and "ladder_assignment" in bot_log
    events = [e for m in messages if m["type"] == "seat" for e in m["events"]]
    assert not [e for e in events if e["kind"] == "defaulted" and e.get("seat") == 2]
    code, replay, _ = get_json(url + f"api/replay/{match_id}")
    assert code == 200, replay
    # Unrated: the ladder's standings are as they were, and the bot waits again.
    assert get_json(url + "api/standings")[1] == before
    again = asyncio.run(_play(url, 2, opponents=[{"ladder": "solo"}]))
    assert again[-1]["final"]["status"] == "finished"
    assert get_json(url + "api/standings")[1] == before
