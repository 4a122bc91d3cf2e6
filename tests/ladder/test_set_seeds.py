"""A duplicate set's seed, in-process (a real runners, storage and ladder store, a manual
clock): every match of the set commits to one seed and deals one game; the seed stays
hidden (record, MatchEnded) until the set's last match has ended; the ladder then
completes the sealed records, which verify; on an SQLite file and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from mammamia import record as rec
from mammamia.fairness import DealSet, commitment, game_seed, unseal, verify
from mammamia_pb import arena_pb2 as pb
from server import wire
from server.db.ladder.rows import SeatResult
from server.db.ladder.store import LadderStore
from server.db.matches import Storage
from server.runners import Runners
from server.visibility import final

from .conftest import MAMMAMIA

SERVER_SEED = "5eed" * 16
SET_ID = "set-0123456789abcdef"
NAMES = ("ann", "bob", "cy")


class StillClock:
    """Time that stands still: no deadline passes while the seats answer at once."""

    class Timer:
        def cancel(self) -> None:
            pass

    def now(self) -> float:
        return 1_800_000_000.0

    def call_at(self, when: float, callback: Callable[[], None]) -> StillClock.Timer:
        return StillClock.Timer()


def play_set(database: str, matches: int) -> tuple[list[str], list[pb.MatchEnded]]:
    """Returns (the stored records, seat 0's MatchEnded) of the first ``matches`` of a
    3-player set, played in-process to their ends with seeded random answers (the
    seats give client seeds, which a set does not mix in)."""

    async def go() -> tuple[list[str], list[pb.MatchEnded]]:
        storage = Storage(database)
        try:
            runners = Runners(storage, clock=StillClock())
            records, ended = [], []
            for index in range(matches):
                seated = [NAMES[(seat - index) % 3] for seat in range(3)]
                match = runners.create_match(
                    3, names=seated, ladder=True, deal_set=(DealSet(SET_ID, index, 3), SERVER_SEED)
                )
                for seat in range(3):
                    match.join(seat, None, f"entropy of {seated[seat]}")
                rng = random.Random(index)
                while (d := match.match.decision) is not None:
                    match.answer(d.seat, d.id, rng.randrange(len(d.options)), None)
                await asyncio.wait_for(match.result(), 30)
                text = storage.record(match.id)
                assert text is not None
                records.append(text)
                m = match.match
                assert m.ended is not None
                entry = wire.stream_entry(final(m, m.ended, 0), m, 0.0)
                ended.append(pb.SeatEvents.FromString(entry).events[0].match_ended)
            return records, ended
        finally:
            storage.close()

    return asyncio.run(go())


def test_a_sets_matches_share_one_commitment_and_hide_the_seed_until_the_last(
    database: str, tmp_path: Path
) -> None:
    records, ended = play_set(database, 2)
    committed = commitment(SET_ID, SERVER_SEED)
    for index, text in enumerate(records):
        data = json.loads(text)
        fair = data["meta"]["fairness"]
        assert fair["commitment"] == committed
        assert fair["set"] == {"id": SET_ID, "index": index, "size": 3}
        # Sealed: neither the seed nor the deal it shuffles, nor the reshuffles.
        assert not {"seed", "deal", "reshuffles"} & set(data)
        assert "server_seed" not in fair and "client_seeds" not in fair
        assert SERVER_SEED not in text
        assert ended[index].server_seed == "" and ended[index].game_seed == 0
        faults = verify(rec.loads(text))
        assert len(faults) == 1 and faults[0].startswith("cannot verify yet")
    path = tmp_path / "sealed.json"
    path.write_text(records[0])
    out = subprocess.run(
        [str(MAMMAMIA), "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2
    assert "cannot verify yet" in out.stderr and SET_ID in out.stderr


def test_the_last_match_reveals_the_seed_and_the_completed_set_verifies(
    database: str, tmp_path: Path
) -> None:
    records, ended = play_set(database, 3)
    last = rec.loads(records[2])
    assert verify(last) == []
    # Client seeds are not mixed in: the set's one seed deals every match.
    seed = game_seed(SERVER_SEED, ["", "", ""])
    assert last.seed == seed and ended[2].game_seed == seed
    assert ended[2].server_seed == SERVER_SEED
    assert last.meta["fairness"]["client_seeds"] == ["", "", ""]

    # The ladder ends the set: the sealed records are completed in the database.
    store = LadderStore(database)
    try:
        store.start_set(SET_ID, NAMES, SERVER_SEED, commitment(SET_ID, SERVER_SEED))
        for index, text in enumerate(records):
            data = json.loads(text)
            store.start_match(
                data["meta"]["match"],
                data["meta"]["names"],
                commitment(SET_ID, SERVER_SEED),
                SET_ID,
                index,
            )
            assert store.finish_match(
                data["meta"]["match"], [SeatResult(rank, 0) for rank in (1, 2, 3)]
            )
        assert store.reveal_set(SET_ID, "unused") == "complete"
        assert store.reveal_set(SET_ID, "unused") is None  # once
        row = store.deal_set(SET_ID)
        assert row is not None and row.status == "complete" and len(row.matches) == 3
        completed = []
        for text in records:
            stored = Storage(database)
            try:
                revealed = stored.record(json.loads(text)["meta"]["match"])
            finally:
                stored.close()
            assert revealed is not None
            completed.append(rec.loads(revealed))
    finally:
        store.close()
    for index, record in enumerate(completed):
        assert verify(record) == [], index
        assert record.seed == seed
        assert record.deal == last.deal and record.first_player == last.first_player
        # The seats rotate: the bot at seat s of the first match sits at s + index.
        names = record.meta["names"]
        assert [names[(s + index) % 3] for s in range(3)] == list(NAMES)
    path = tmp_path / "first.json"
    path.write_text(completed[0].dumps())
    out = subprocess.run(
        [str(MAMMAMIA), "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr


def test_unsealing_needs_the_seed_the_set_committed_to(tmp_path: Path) -> None:
    records, _ = play_set(str(tmp_path / "arena.db"), 1)
    with pytest.raises(ValueError, match=SET_ID):
        unseal(records[0], "0" * 64)
    opened = rec.loads(unseal(records[0], SERVER_SEED))
    assert verify(opened) == []
    # An edited completed record fails as any record does.
    edited = opened.to_json()
    edited["meta"]["fairness"]["server_seed"] = "1" + SERVER_SEED[1:]
    assert verify(rec.parse(edited))
    # A record that is not sealed is left as it is.
    assert unseal(opened.dumps(), SERVER_SEED) == opened.dumps()
