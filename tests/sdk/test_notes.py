"""A bot's private notes: kept with the match, returned only to the seat's owner.

A real server, a real bot that leaves a note on every decision (``Bot.note``), and
every other way out of the server checked for the notes' marker: the other seat's
stream, a spectator's Watch, the web page's live view (JSON and its event stream)
and replay, the public records (Spectate, Organiser and Ladder GetRecord without
the owner's proof) and the bot's page. Each check fails if a note gets out there.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import grpc
import pytest

from bots.random_bot import RandomBot
from client_sdk.bot import NOTE_LIMIT, decide
from client_sdk.connection import play_ladder, play_seat, register
from mammamia import Resolve, Turn, View, new_game, view_of
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.notes import fitted_note
from tests.server.client import create_match, play, seat_metadata, watch
from tests.web.conftest import get_json, wait_for, web_url

from .support import MAMMAMIA

MARK = "why-7f3c"
TIMEOUT_S = 90


class NotingBot(RandomBot):
    """Plays at random and leaves a note on each decision, numbered."""

    name = "noter"

    def __init__(self) -> None:
        self.decisions = 0

    def turn(self, view: View) -> Turn:
        self.decisions += 1
        self.note(f"{MARK} turn {self.decisions}")
        return super().turn(view)

    def resolve(self, view: View) -> Resolve:
        self.decisions += 1
        self.note(f"{MARK} resolve {self.decisions}")
        return super().resolve(view)


def notes(record: str) -> list[dict[str, Any]]:
    return list(json.loads(record).get("meta", {}).get("notes", []))


def test_a_note_is_cut_at_1024_bytes_at_a_character_boundary() -> None:
    assert fitted_note("short") == "short"
    cut = fitted_note("é" * 600)  # 1200 bytes, 2 each
    assert cut == "é" * 512 and len(cut.encode()) == 1024 == NOTE_LIMIT
    assert len(fitted_note("a" + "é" * 600).encode()) == 1023  # no half character

    class Long(RandomBot):
        def turn(self, view: View) -> Turn:
            self.note("x" * 1000)
            self.note("y" * 1000)
            return super().turn(view)

    game = new_game(2, seed=1)
    seat = game.to_act
    assert seat is not None
    decision = decide(Long(), view_of(game, seat))
    assert decision.note == ("x" * 1000 + "\n" + "y" * 1000)[:1024]
    assert decide(RandomBot(), view_of(game, seat)).note == ""


def test_notes_reach_the_seat_token_and_nobody_else(server: Any) -> None:
    url = web_url(server)

    async def main() -> tuple[str, Any, Any, list[str], list[pb.SeatEvent]]:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2)
            mine, other = created.seat_tokens
            match_id = created.match_id
            live = asyncio.to_thread(_read_stream, f"{url}api/live/{match_id}/stream")
            snapshot = asyncio.to_thread(get_json, f"{url}api/live/{match_id}")
            _, seen_other, stream, watched, _ = await asyncio.gather(
                play_seat(NotingBot(), server.address, mine),
                play(channel, other),
                live,
                watch(channel, match_id),
                snapshot,
            )
            return match_id, seen_other, stream, [mine, other], watched

    match_id, seen_other, stream, (mine, other), watched = asyncio.run(
        asyncio.wait_for(main(), TIMEOUT_S)
    )
    assert MARK not in "".join(str(m) for m in seen_other.messages)
    assert MARK not in "".join(str(e) for e in watched)
    assert MARK not in stream
    assert MARK not in get_json(f"{url}api/replay/{match_id}")[2]
    assert MARK not in get_json(f"{url}api/live/{match_id}")[2]

    with grpc.insecure_channel(server.address) as channel:
        spectate = pb_grpc.SpectateStub(channel)
        request = pb.GetRecordRequest(match_id=match_id)
        public = spectate.GetRecord(request, timeout=10).json
        assert MARK not in public and "notes" not in json.loads(public)["meta"]
        organiser = pb_grpc.OrganiserStub(channel).GetRecord(
            request, metadata=(("organiser-key", server.organiser_key),), timeout=10
        )
        assert MARK not in organiser.json
        theirs = spectate.GetRecord(request, metadata=seat_metadata(other), timeout=10).json
        assert MARK not in theirs
        own = spectate.GetRecord(request, metadata=seat_metadata(mine), timeout=10).json
    left = notes(own)
    record = json.loads(own)
    assert left and all(n["seat"] == 0 and n["note"].startswith(MARK) for n in left)
    # Each note is beside its own decision: the seat's action of that index.
    assert all(record["actions"][n["action"]]["seat"] == 0 for n in left)
    # Every decision of seat 0 was the bot's (none defaulted), each with its note.
    assert len(left) == sum(1 for a in record["actions"] if a["seat"] == 0)
    assert [n["note"].split()[-1] for n in left] == [str(i) for i in range(1, len(left) + 1)]


def _read_stream(url: str) -> str:
    """Returns the text of a Server-Sent Events stream, to its end."""
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r:
        return str(r.read().decode())


@pytest.fixture
def ladder(start_server: Any) -> Any:
    return start_server(ladder_players="2-2")


def test_a_ladder_bots_notes_come_back_with_its_key_and_show_beside_its_decisions(
    ladder: Any, tmp_path: Path
) -> None:
    async def main() -> tuple[str, str]:
        noter = await register(ladder.address, "noter")
        quiet = await register(ladder.address, "quiet")
        await asyncio.gather(
            play_ladder(NotingBot, ladder.address, "noter", noter, matches=1),
            play_ladder(RandomBot, ladder.address, "quiet", quiet, matches=1),
        )
        return noter, quiet

    noter_key, quiet_key = asyncio.run(asyncio.wait_for(main(), TIMEOUT_S))
    (tmp_path / "noter.key").write_text(noter_key + "\n")
    with grpc.insecure_channel(ladder.address) as channel:
        stub = pb_grpc.LadderStub(channel)
        # The ladder lists the match once its result is settled, just after its end.
        (match,) = wait_for(
            lambda: stub.Matches(pb.MatchesRequest(name="noter"), timeout=10).matches,
            30,
            "the ladder to list the match",
        )
        public = stub.GetRecord(pb.GetRecordRequest(match_id=match.match_id), timeout=10).json
        assert MARK not in public
        other = stub.GetRecord(
            pb.GetRecordRequest(match_id=match.match_id, name="quiet"),
            metadata=(("bot-key", quiet_key),),
            timeout=10,
        ).json
        assert MARK not in other
        with pytest.raises(grpc.RpcError) as refused:
            stub.GetRecord(
                pb.GetRecordRequest(match_id=match.match_id, name="noter"),
                metadata=(("bot-key", quiet_key),),
                timeout=10,
            )
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    url = web_url(ladder)
    for page in (f"api/replay/{match.match_id}", "api/bots/noter", "api/matches?bot=noter"):
        assert MARK not in get_json(url + page)[2], page

    printed = subprocess.run(
        [
            MAMMAMIA,
            "ladder",
            "record",
            "--server",
            ladder.address,
            "--name",
            "noter",
            "--key-file",
            str(tmp_path / "noter.key"),
            match.match_id,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    left = notes(printed)
    seat = list(match.names).index("noter")
    assert left and all(n["seat"] == seat and MARK in n["note"] for n in left)
    (tmp_path / "own.json").write_text(printed)
    shown = subprocess.run(
        [MAMMAMIA, "show", str(tmp_path / "own.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    noted = [i for i, line in enumerate(shown) if line.strip().startswith("note (")]
    assert len(noted) == len(left)
    assert all("noter" in shown[i] and MARK in shown[i] for i in noted)
    assert noted[0] > 0 and not shown[noted[0] - 1].strip().startswith("note (")
