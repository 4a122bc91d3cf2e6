"""The ladder lends entered bots for an unrated match of their own (``Ladder.lend``,
the web page's games with a person): each is told its seat on its own Enter stream,
again after a reconnect, is in no ladder table meanwhile, and waits again once the
loan ends; a name not entered, a bot already in a match, and a held ladder are
refused (the ladder on a real SQLite file, the server's own runners)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from server.db.ladder.rows import LadderError
from server.db.ladder.store import LadderStore
from server.db.matches import Storage
from server.ladder.ladder import Ladder
from server.ladder.lobby import Assignment, LocalLobby, NotFreeError, StartedMatch
from server.ladder.matches import ServerMatches
from server.ladder.scheduler import Policy
from server.runners import Runners


def test_a_lent_bot_is_told_its_seat_and_waits_again_after(tmp_path: Path) -> None:
    async def go() -> None:
        db = tmp_path / "arena.db"
        storage = Storage(db)
        runners = Runners(storage, journal=False)
        store = LadderStore(db)
        ladder = Ladder(store, ServerMatches(runners), Policy(2, 2), runners=runners)
        lobby = ladder.lobby
        assert isinstance(lobby, LocalLobby)
        try:
            entrant = await lobby.enter("ada")
            with pytest.raises(NotFreeError, match="not entered in the ladder now: 'ghost'"):
                ladder.lend(["ada", "ghost"])
            assert lobby.scheduler.waiting == ["ada"]  # nothing taken

            loan = ladder.lend(["ada"])
            assert lobby.scheduler.waiting == []
            with pytest.raises(NotFreeError, match="playing a match now: 'ada'"):
                ladder.lend(["ada"])
            match = StartedMatch("m1", ("you", "ada"), ("t0", "t1"), "c")
            loan.seat(match, {"ada": 1})
            told = await asyncio.wait_for(anext(entrant), 5)
            assert told == Assignment("m1", "t1", 1, 2, "c")

            # A reconnect mid-match is told its seat again.
            entrant.close()
            entrant = await lobby.enter("ada")
            assert await asyncio.wait_for(anext(entrant), 5) == told

            loan.end()
            loan.end()  # once
            assert lobby.scheduler.waiting == ["ada"]
            ladder.lend(["ada"]).end()

            ladder.hold(True, "operator")
            with pytest.raises(LadderError, match="paused"):
                ladder.lend(["ada"])
            ladder.hold(False, "operator")
            ladder.lend(["ada"]).end()
            entrant.close()
        finally:
            ladder.writer.close()
            ladder.reader.close()
            store.close()
            storage.close()

    asyncio.run(go())
