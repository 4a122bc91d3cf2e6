"""The ladder's scheduling passes of many hosts (``LadderStore.take``), racing on one
PostgreSQL database (and run on an SQLite file too): no bot is seated in two running
matches, entries gone quiet are passed over, and so are a dead host's at once (on
PostgreSQL), a finished match frees its bots, and a newer entry of a bot replaces the
older one's row."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator, Sequence

import pytest

from server.db.ladder.rows import Formed, SeatResult
from server.db.ladder.store import LadderStore
from server.ladder.ratings import Rating
from server.ladder.scheduler import Policy, Waiting, form_matches

NOW = 1000.0


@pytest.fixture
def stores(database: str) -> Iterator[list[LadderStore]]:
    """Returns two stores on one database: the ladders of hosts "host-a" and "host-b",
    each claimed as its host's (on PostgreSQL: present)."""
    opened = [LadderStore(database), LadderStore(database)]
    opened[0].claim(alone=False, host="host-a")
    opened[1].claim(alone=False, host="host-b")
    yield opened
    for s in opened:
        s.close()


def pairs(seed: int) -> Callable[[list[tuple[str, Rating, int, int]]], list[tuple[str, ...]]]:
    """Returns a ``form`` of one two-player match per pass (what a host's pass does)."""
    rng = random.Random(seed)

    def form(waiting: list[tuple[str, Rating, int, int]]) -> list[tuple[str, ...]]:
        return form_matches(
            [Waiting(n, r.mu, g, league) for n, r, g, league in waiting],
            Policy(2, 2, concurrency=1),
            0,
            rng,
        )

    return form


def reserve(ids: list[int]) -> Callable[[int], tuple[str, Sequence[str]]]:
    def new(players: int) -> tuple[str, Sequence[str]]:
        ids.append(len(ids))
        return f"m{threading.get_ident()}-{ids[-1]}", [f"t{ids[-1]}-{s}" for s in range(players)]

    return new


def running_seats(store: LadderStore) -> list[str]:
    return [
        n
        for (n,) in store._db.execute(
            "SELECT r.name FROM ladder_results r JOIN ladder_matches m ON m.match_id = r.match_id"
            " WHERE m.status = 'running'"
        ).fetchall()
    ]


def test_racing_passes_of_two_hosts_seat_each_bot_once(stores: list[LadderStore]) -> None:
    a, b = stores
    bots = [f"bot-{i}" for i in range(12)]
    for i, name in enumerate(bots):
        (a if i % 2 else b).enter(name, "host-a" if i % 2 else "host-b", f"s-{name}", NOW)
    formed: list[list[Formed]] = [[], []]
    ids: list[int] = []

    def passes(k: int, store: LadderStore, host: str) -> None:
        for _ in range(10):
            formed[k].extend(store.take(host, f"{host}:1", NOW - 10, pairs(k), reserve(ids)))

    threads = [
        threading.Thread(target=passes, args=(0, a, "host-a")),
        threading.Thread(target=passes, args=(1, b, "host-b")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    seated = running_seats(a)
    assert sorted(seated) == sorted(bots)  # every bot once, none twice
    assert len(formed[0]) + len(formed[1]) == 6
    hosts = dict(a._db.execute("SELECT match_id, host FROM ladder_matches").fetchall())
    for k, host in ((0, "host-a"), (1, "host-b")):
        assert all(hosts[f.match_id] == host for f in formed[k])  # run where formed
    # The host of a bot's Enter stream reads its seat, token, commitment and the
    # running host, once the running host has published them (the match exists).
    match = (formed[0] or formed[1])[0]
    assert b.seats(list(match.names)) == {}
    a.publish(match.match_id, "c0ffee")
    seats = b.seats(list(match.names))
    assert {seats[n].token for n in match.names} == set(match.tokens)
    assert {(seats[n].match_id, seats[n].commitment) for n in match.names} == {
        (match.match_id, "c0ffee")
    }


def test_a_pass_takes_live_idle_bots_only(stores: list[LadderStore]) -> None:
    a, b = stores
    a.enter("ada", "host-a", "s1", NOW)
    a.enter("bob", "host-a", "s2", NOW)
    b.enter("quiet", "host-b", "s3", NOW - 60)  # its host stopped beating
    ids: list[int] = []
    (first,) = a.take("host-a", "a:1", NOW - 10, pairs(1), reserve(ids))
    assert sorted(first.names) == ["ada", "bob"]
    a.publish(first.match_id, "")
    b.enter("cy", "host-b", "s4", NOW)
    assert b.take("host-b", "b:1", NOW - 10, pairs(2), reserve(ids)) == []  # ada, bob busy
    b.beat("host-b", ["s3"], NOW)  # back: beats again
    a.finish_match(first.match_id, [SeatResult(1, 3), SeatResult(2, 1)])
    assert a.seats(["ada", "bob"]) == {}  # tokens gone with the match
    taken = b.take("host-b", "b:1", NOW - 10, pairs(3), reserve(ids))
    taken += b.take("host-b", "b:1", NOW - 10, pairs(4), reserve(ids))
    assert sorted(n for f in taken for n in f.names) == ["ada", "bob", "cy", "quiet"]


def test_the_entries_of_a_host_whose_session_ended_are_passed_over_at_once(
    postgres_url: str,
) -> None:
    a, b = LadderStore(postgres_url), LadderStore(postgres_url)
    try:
        a.claim(alone=False, host="host-a")
        b.claim(alone=False, host="host-b")
        for name, host in (("ada", "host-a"), ("bob", "host-b"), ("cy", "host-b")):
            a.enter(name, host, f"s-{name}", NOW)
        b.close()  # host-b's process ends: its session, and presence, with it
        ids: list[int] = []
        # Its entries still beat recently, but only host-a's own bot waits.
        assert a.take("host-a", "a:1", NOW - 10, pairs(1), reserve(ids)) == []
        b = LadderStore(postgres_url)
        b.claim(alone=False, host="host-b")  # host-b back
        (formed,) = a.take("host-a", "a:1", NOW - 10, pairs(1), reserve(ids))
        assert "ada" in formed.names
        # A host's own entries wait without its presence (before it is taken again).
        a.finish_match(formed.match_id, [SeatResult(1, 3), SeatResult(2, 1)])
        b.close()
        b = LadderStore(postgres_url)
        (own,) = b.take("host-b", "b:1", NOW - 10, pairs(2), reserve(ids))
        assert sorted(own.names) == ["bob", "cy"]
    finally:
        a.close()
        b.close()


def test_a_claim_lost_with_its_session_is_taken_again(postgres_url: str) -> None:
    a, b = LadderStore(postgres_url), LadderStore(postgres_url)
    try:
        a.claim(alone=False, host="host-a")
        b.claim(alone=False, host="host-b")
        assert a.keep_claim() is False  # held: nothing to do
        a.enter("ada", "host-a", "s-ada", NOW)
        a.enter("bob", "host-a", "s-bob", NOW)
        # What a PostgreSQL restart does to host-a's claim: its session ends.
        held = (
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory'"
            " AND objid = CAST(hashtext('host-a') AS oid)"
        )
        (pid,) = b._db.execute(held).fetchone()
        b._db.execute("SELECT pg_terminate_backend(?, 10000)", (pid,))
        assert b._db.execute(held).fetchall() == []
        ids: list[int] = []
        assert b.take("host-b", "b:1", NOW - 10, pairs(1), reserve(ids)) == []
        assert a.keep_claim() is True  # connects again and takes it
        assert a.keep_claim() is False
        (formed,) = b.take("host-b", "b:1", NOW - 10, pairs(1), reserve(ids))
        assert sorted(formed.names) == ["ada", "bob"]
    finally:
        a.close()
        b.close()


def test_a_newer_entry_replaces_the_row_and_a_host_clears_its_own(
    stores: list[LadderStore],
) -> None:
    a, b = stores
    a.enter("ada", "host-a", "old", NOW)
    b.enter("ada", "host-b", "new", NOW + 1)
    assert a.entries(["ada"]) == {"ada": ("host-b", "new")}
    a.leave("ada", "old")  # the older stream's end
    assert a.entries(["ada"]) == {"ada": ("host-b", "new")}
    a.enter("bob", "host-a", "s", NOW)
    assert a.clear_entries("host-a") == 1
    assert set(b.entries(["ada", "bob"])) == {"ada"}


def test_rows_from_before_host_ids_are_taken_by_the_first_host(postgres_url: str) -> None:
    from server.db.connection import connect
    from server.db.matches import Storage

    db = connect(postgres_url)
    db.execute(
        "INSERT INTO matches (id, status, players, names, ladder, created)"
        " VALUES ('old', 'running', 2, '[]', 1, '2026-01-01')"
    )
    db.execute("INSERT INTO match_setups (match_id, setup) VALUES ('old', '{}')")
    db.execute(
        "INSERT INTO ladder_matches (match_id, players, status, created)"
        " VALUES ('old', 2, 'running', 1.0)"
    )
    first, second = Storage(postgres_url, host_id="h1"), Storage(postgres_url, host_id="h2")
    ladder = LadderStore(postgres_url)
    try:
        assert first.adopt() == 1 and second.adopt() == 0
        assert ladder.adopt("h1") == 1 and ladder.adopt("h2") == 0
        assert ladder.running(host="h1") == ["old"] and ladder.running(host="h2") == []
        # Each host aborts its own unfinished rows only.
        assert second.abort_unfinished("restart") == []
        assert first.abort_unfinished("restart") == ["old"]
        (host,) = db.execute("SELECT host FROM match_setups WHERE match_id = 'old'").fetchone()
        assert host == "h1"
    finally:
        first.close()
        second.close()
        ladder.close()
        db.close()
