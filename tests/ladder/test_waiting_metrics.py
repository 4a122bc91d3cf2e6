"""What the ladder's gauges read of a lobby many hosts share: the bots whose Enter
stream is on a host and that hold no running seat, each waiting since its entry or
the end of its newest match. On an SQLite file and on PostgreSQL (the ``database``
fixture, tests/storage/postgres.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from server.db.ladder.rows import SeatResult
from server.db.ladder.store import LadderStore


@pytest.fixture
def store(database: str) -> Iterator[LadderStore]:
    s = LadderStore(database)
    yield s
    s.close()


def test_the_bots_waiting_on_a_host_and_since_when(store: LadderStore) -> None:
    for name in ("ada", "bob", "cy", "dee"):
        store.register(name)
    store.enter("ada", "host-a", "s1", 100.0)
    store.enter("bob", "host-a", "s2", 110.0)
    store.enter("cy", "host-a", "s3", 120.0)
    store.enter("dee", "host-b", "s4", 90.0)  # another host's
    assert sorted(store.waiting_since("host-a", 0.0)) == [100.0, 110.0, 120.0]
    assert store.waiting_since("host-b", 0.0) == [90.0]

    # A running match holds ada and bob: only cy waits on host-a.
    store.start_match("m1", ["ada", "bob"], host="host-a")
    assert store.waiting_since("host-a", 0.0) == [120.0]
    # Once it ended, they wait since its end (later than their entries).
    before = time.time()
    assert store.finish_match("m1", [SeatResult(1, 3, None, False), SeatResult(2, 1, None, False)])
    after = time.time()
    since = sorted(store.waiting_since("host-a", 0.0))
    assert since[0] == 120.0 and all(before <= t <= after for t in since[1:]) and len(since) == 3
    # An entry whose heartbeat is older than the cut-off is gone, not waiting.
    assert store.waiting_since("host-a", 121.0) == []
