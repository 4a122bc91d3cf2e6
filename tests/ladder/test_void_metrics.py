"""A void counts on the server's metrics: ``mammamia_matches_finished_total``
labelled ``voided`` goes up once per match voided through the ladder's discipline
(the ladder on a real SQLite file, the server's own runners and metrics)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from server.db.ladder.rows import SeatResult
from server.db.ladder.store import LadderStore
from server.db.matches import Storage
from server.ladder.ladder import Ladder
from server.ladder.matches import ServerMatches
from server.ladder.scheduler import Policy
from server.metrics import Metrics
from server.runners import Runners


def voided(metrics: Metrics) -> float:
    return (
        metrics.registry.get_sample_value("mammamia_matches_finished_total", {"outcome": "voided"})
        or 0.0
    )


def test_a_voided_match_is_counted_once(tmp_path: Path) -> None:
    async def go() -> None:
        db = tmp_path / "arena.db"
        metrics = Metrics()
        storage = Storage(db)
        runners = Runners(storage, metrics=metrics)
        store = LadderStore(db)
        ladder = Ladder(store, ServerMatches(runners), Policy(), runners=runners)
        try:
            store.start_match("m1", ["ada", "bob"])
            assert store.finish_match(
                "m1", [SeatResult(1, 3, None, False), SeatResult(2, 1, None, False)]
            )
            store.apply_ratings()
            assert voided(metrics) == 0
            assert await ladder.discipline.void("m1", "a server fault", "alice")
            assert voided(metrics) == 1
            assert not await ladder.discipline.void("m1", "again", "alice")  # once
            assert voided(metrics) == 1
        finally:
            ladder.writer.close()
            ladder.reader.close()
            store.close()
            if runners.journal is not None:
                runners.journal.close()
            storage.close()

    asyncio.run(go())
