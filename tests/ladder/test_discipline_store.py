"""Discipline, stored: voids replay the ratings, suspensions and quotas are read back,
quarantine looks at the seats the default policy played; every change audited. On
an SQLite file and on PostgreSQL (the ``database`` fixture, tests/storage/postgres.py)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest

from server.db.connection import connect
from server.db.ladder.discipline import (
    HOUR_S,
    NotFoundError,
    NotVoidableError,
    Quota,
)
from server.db.ladder.rows import LadderError, SeatResult
from server.db.ladder.store import LadderStore
from server.ladder.cli import _compare
from server.ladder.ratings import Result, replay


@pytest.fixture
def store(database: str) -> Iterator[LadderStore]:
    s = LadderStore(database)
    yield s
    s.close()


def finish(
    store: LadderStore,
    match_id: str,
    names: list[str],
    ranks: list[int],
    autopilot: tuple[str, ...] = (),
) -> None:
    store.start_match(match_id, names)
    assert store.finish_match(
        match_id,
        [SeatResult(k, 4 - k, None, n in autopilot) for n, k in zip(names, ranks, strict=True)],
    )


def audit(database: str) -> list[tuple[str, str, str, str, dict[str, object]]]:
    db = connect(database)
    try:
        rows = db.execute(
            "SELECT operator, action, target, reason, detail FROM audit ORDER BY seq"
        ).fetchall()
    finally:
        db.close()
    return [(o, a, t, r, json.loads(d)) for o, a, t, r, d in rows]


def test_a_voided_match_leaves_the_ratings_and_rerate_agrees(
    store: LadderStore, database: str
) -> None:
    rng = random.Random(5)
    bots = [f"bot{i}" for i in range(6)]
    results: dict[str, Result] = {}
    for i in range(30):
        names = rng.sample(bots, rng.randint(2, 5))
        ranks = [rng.randint(1, 3) for _ in names]
        finish(store, f"m{i:02}", names, ranks)
        results[f"m{i:02}"] = Result(tuple(names), tuple(ranks))
        if i % 4 == 0:
            store.apply_ratings()
    store.apply_ratings()
    before = store.ratings()

    for match_id in ["m03", "m17", "m29"]:  # early, middle, last
        assert store.void_match(match_id, "a server fault", "alice", 1000.0)
    assert not store.void_match("m03", "again", "alice", 1001.0)  # once

    kept = [r for m, r in sorted(results.items()) if m not in {"m03", "m17", "m29"}]
    assert store.rated_results() == kept
    after = store.ratings()
    expected = replay(kept)
    assert after.keys() == expected.keys()
    assert all(after[n].agrees(expected[n]) for n in after)
    assert after != before
    assert store.rated() == 27
    assert store.tallies() == store.recount()
    assert store.stored_positions() == store.recount_positions()
    assert _compare(store)  # what `mammamia ladder rerate` says
    # Still listed, marked voided, and a later result is rated after the replay.
    m17 = store.match("m17")
    assert m17 is not None and m17.void_reason == "a server fault" and m17.voided_by == "alice"
    assert store.match("m16") is not None and store.match("m16").void_reason is None  # type: ignore[union-attr]
    assert store.voids() == 3
    finish(store, "m30", ["bot0", "bot1"], [1, 2])
    assert store.apply_ratings() == 1
    assert _compare(store)
    voids = [row for row in audit(database) if row[1] == "match.void"]
    assert [(o, t, r) for o, _, t, r, _ in voids] == [
        ("alice", "m03", "a server fault"),
        ("alice", "m17", "a server fault"),
        ("alice", "m29", "a server fault"),
    ]


def test_only_a_finished_ladder_match_is_voided(store: LadderStore) -> None:
    store.start_match("running", ["a", "b"])
    with pytest.raises(NotVoidableError, match="running"):
        store.void_match("running", "why", "alice", 1.0)
    store.start_match("cut", ["a", "b"])
    store.abort_match("cut")
    with pytest.raises(NotVoidableError, match="aborted"):
        store.void_match("cut", "why", "alice", 1.0)
    with pytest.raises(NotFoundError):
        store.void_match("nope", "why", "alice", 1.0)


def test_a_suspension_is_stored_shown_in_the_standings_and_lifted(
    store: LadderStore, database: str
) -> None:
    for name in ["a", "b", "c"]:
        store.register(name)
    finish(store, "m1", ["a", "b", "c"], [1, 2, 3])
    store.apply_ratings()
    assert store.suspend("b", "plays too slowly", "alice", 50.0)
    assert not store.suspend("b", "still too slow", "alice", 60.0)
    suspension = store.suspension("b")
    assert suspension is not None
    assert (suspension.reason, suspension.by, suspension.at) == ("still too slow", "alice", 60.0)
    assert store.suspension("a") is None
    _, table = store.standings()
    assert {s.name: s.suspended for s in table} == {"a": None, "b": "still too slow", "c": None}
    assert store.benched(["a", "b", "c"], 100.0, 0) == {"b"}
    assert store.reinstate("b", "fixed", "bob", 70.0)
    assert not store.reinstate("b", "fixed", "bob", 71.0)
    assert store.suspension("b") is None
    assert store.benched(["a", "b", "c"], 100.0, 0) == set()
    with pytest.raises(NotFoundError):
        store.suspend("nobody", "why", "alice", 1.0)
    assert [(o, a, t, r) for o, a, t, r, _ in audit(database)] == [
        ("alice", "bot.suspend", "b", "plays too slowly"),
        ("alice", "bot.suspend", "b", "still too slow"),
        ("bob", "bot.reinstate", "b", "fixed"),
        ("bob", "bot.reinstate", "b", "fixed"),
    ]


def test_quotas_count_entries_per_hour_and_matches_per_hour(store: LadderStore) -> None:
    for name in ["a", "b"]:
        store.register(name)
    # Entries: the server's default of 2 an hour, then the bot's own of 3.
    assert store.count_entry("a", 1000.0, 2) is None
    assert store.count_entry("a", 1001.0, 2) is None
    assert store.count_entry("a", 1002.0, 2) == 2
    assert store.count_entry("a", 1000.0 + HOUR_S, 2) is None  # a new hour
    assert store.set_quota("a", None, 3, "a reconnecting bot", "alice", 5.0) == Quota(None, None)
    assert store.quota("a") == Quota(None, 3)
    assert store.count_entry("a", 1000.0 + HOUR_S + 1, 2) is None
    assert store.count_entry("a", 1000.0 + HOUR_S + 2, 2) is None
    assert store.count_entry("a", 1000.0 + HOUR_S + 3, 2) == 3
    assert store.count_entry("b", 1000.0, 0) is None  # 0: no quota
    # Matches: ``a`` may play 1 an hour (its own), ``b`` the default of 2.
    store.set_quota("a", 1, 3, "one an hour", "alice", 6.0)
    finish(store, "m1", ["a", "b"], [1, 2])
    created = store.match("m1")
    assert created is not None
    now = created.created + 1
    assert store.spent(["a", "b"], now, 2) == {"a"}
    finish(store, "m2", ["b", "a"], [1, 2])
    assert store.spent(["a", "b"], now, 2) == {"a", "b"}
    assert store.spent(["a", "b"], now, 0) == {"a"}  # b: no default quota
    assert store.spent(["a", "b"], now + HOUR_S, 2) == set()
    with pytest.raises(LadderError, match="quota"):
        store.set_quota("a", -1, None, "why", "alice", 7.0)


def test_quarantine_suspends_a_bot_whose_last_matches_the_default_policy_played(
    store: LadderStore, database: str
) -> None:
    for name in ["slow", "fast", "flaky"]:
        store.register(name)
    # slow: on autopilot in 3 of its last 4; flaky: in 2 of 4 (not more than half).
    plays = [("slow", "flaky"), ("slow",), (), ("slow", "flaky")]
    for i, autopilot in enumerate(plays):
        finish(store, f"m{i}", ["slow", "fast", "flaky"], [3, 1, 2], autopilot)
    assert store.quarantine(["slow", "fast", "flaky"], 5, 100.0) == []  # 4 < 5 matches
    assert store.quarantine(["slow", "fast", "flaky"], 4, 100.0) == ["slow"]
    suspension = store.suspension("slow")
    assert suspension is not None and (suspension.reason, suspension.by) == (
        "quarantine",
        "server",
    )
    assert store.quarantine(["slow"], 4, 101.0) == []  # suspended already
    # A voided match does not count against a bot.
    store.apply_ratings()
    store.void_match("m3", "a server fault", "alice", 102.0)
    store.reinstate("slow", "fixed its timeouts", "alice", 103.0)
    assert store.quarantine(["slow"], 3, 104.0) == ["slow"]  # m2, m1, m0: 2 of 3
    rows = [r for r in audit(database) if r[0] == "server"]
    assert [(a, t, r, d) for _, a, t, r, d in rows] == [
        ("bot.suspend", "slow", "quarantine", {"defaulted": 3, "matches": 4}),
        ("bot.suspend", "slow", "quarantine", {"defaulted": 2, "matches": 3}),
    ]
