"""The server's storage and the ladder's store behave alike on an SQLite file and on
PostgreSQL (the ``database`` fixture runs each test on both): a match's end is stored
once, lists are newest first, a crash's leftovers are aborted, one server claims a
database, ratings and tallies are applied once per result, and PostgreSQL's schema
comes from the same migrations."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

import pytest

from server.db import schema
from server.db.connection import PostgresError, StorageError, connect, is_url
from server.db.ladder.rows import SeatResult
from server.db.ladder.store import LadderStore
from server.db.matches import Storage
from server.status import MatchStatus

from .postgres import PostgresServer, wait_accepting

CREATED = "2026-01-01T00:00:00.000+00:00"


def _end(
    storage: Storage,
    match_id: str,
    status: MatchStatus = MatchStatus.FINISHED,
    record: str = "{}",
    *,
    winners: Sequence[int] = (),
    ranks: Sequence[int] = (),
    delivered: Sequence[int] = (),
    reason: str | None = None,
) -> bool:
    """Returns whether this call ended the match (Storage.end_match for two players)."""
    return asyncio.run(
        storage.end_match(
            match_id,
            status,
            record,
            players=2,
            names=("a", "b"),
            ladder=False,
            created=CREATED,
            winners=winners,
            ranks=ranks,
            delivered=delivered,
            reason=reason,
        )
    )


def test_a_match_is_stored_waiting_running_then_ended_once(database: str) -> None:
    storage = Storage(database)
    storage.add_match("m1", 2, ["ann", "bob"], True, CREATED)
    storage.set_running("m1")
    assert _end(storage, "m1", record='{"first": 1}', winners=[1], ranks=[2, 1], delivered=[1, 3])
    assert not _end(storage, "m1", MatchStatus.ABORTED, '{"second": 2}', reason="late")
    storage.add_match("m1", 2, ["x", "y"], False, CREATED)  # a second time: nothing
    asyncio.run(storage.writer.flush())
    row = storage.match("m1")
    assert row is not None and (
        row.status,
        row.winners,
        row.ranks,
        row.delivered,
        row.ladder,
        row.reason,
    ) == ("finished", (1,), (2, 1), (1, 3), True, None)
    assert storage.record("m1") == '{"first": 1}' and storage.record("nope") is None
    assert storage.counts() == {"finished": 1}
    storage.close()


def test_matches_are_listed_newest_first_ties_by_insertion(database: str) -> None:
    storage = Storage(database)
    for match_id in ["b", "a", "c"]:
        storage.add_match(match_id, 2, ["x", "y"], False, CREATED)
    storage.add_match("new", 2, ["x", "y"], False, "2026-02-01T00:00:00.000+00:00")
    asyncio.run(storage.writer.flush())
    assert [m.id for m in storage.matches()] == ["new", "c", "a", "b"]
    assert [m.id for m in storage.matches(limit=2)] == ["new", "c"]
    storage.close()


def test_matches_cut_off_are_aborted_at_start_but_those_kept(database: str) -> None:
    storage = Storage(database)
    for match_id in ["w", "r", "kept"]:
        storage.add_match(match_id, 2, ["x", "y"], False, CREATED)
    storage.set_running("r")
    asyncio.run(storage.writer.flush())
    storage.close()
    again = Storage(database)
    assert sorted(again.abort_unfinished("crash", keep={"kept"})) == ["r", "w"]
    cut, kept = again.match("w"), again.match("kept")
    assert cut is not None and (cut.status, cut.reason) == ("aborted", "crash")
    assert kept is not None and kept.status == "waiting"
    again.close()


def test_one_server_claims_a_database(database: str) -> None:
    first, second = Storage(database), Storage(database)
    first.claim()
    first.check()
    with pytest.raises(StorageError, match="another server uses this database"):
        second.claim()
    first.close()
    second.claim()  # given up with the first's close
    second.close()


def test_ratings_and_tallies_are_applied_once_per_result_in_finish_order(database: str) -> None:
    store = LadderStore(database)
    rng = random.Random(5)
    bots = [f"bot{i}" for i in range(6)]
    for i in range(30):
        names = rng.sample(bots, rng.randint(2, 5))
        store.start_match(f"m{i}", names)
        assert store.finish_match(
            f"m{i}", [SeatResult(rng.randint(1, 3), rng.randint(0, 5)) for _ in names]
        )
        if i % 4 == 0:
            store.apply_ratings()
    store.apply_ratings()
    assert store.apply_ratings() == 0
    for players in [0, *store.player_counts()]:
        assert store.tallies(players) == store.recount(players)
    assert store.rated() == 30 and store.unrated() == 0
    finished, table = store.standings()
    assert finished == 30 and {s.name for s in table} == set(bots)
    assert store.waiting(["bot0", "nobody"]).keys() == {"bot0"}
    store.close()


def test_postgresql_is_brought_to_head_by_the_migrations_and_back(postgres: PostgresServer) -> None:
    url = postgres.database(migrated=False)
    assert schema.revision(url) is None
    assert schema.upgrade(url) and schema.revision(url) == schema.HEAD
    assert not schema.upgrade(url)
    store = LadderStore(url)
    store.start_match("m1", ["a", "b"])
    store.finish_match("m1", [SeatResult(1, 2), SeatResult(2, 1)])
    store.apply_ratings()
    store.close()
    schema.downgrade(url, "0001")
    assert schema.revision(url) == "0001"
    schema.upgrade(url)
    store = LadderStore(url)
    assert store.tallies() == store.recount() and store.rated() == 1
    store.close()


def test_an_unreachable_postgresql_is_refused_with_a_reason(postgres: PostgresServer) -> None:
    url = f"postgresql://someone:secret@127.0.0.1:{postgres.port + 1}/nowhere"
    with pytest.raises(StorageError, match="cannot") as refused:
        Storage(url)
    assert "secret" not in str(refused.value)
    assert is_url(url) and not is_url("postgresql.db")


def test_rerate_refuses_a_postgresql_database_without_a_ladder(
    postgres: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from mammamia.cli import main

    url = postgres.database(migrated=False)
    assert main(["ladder", "rerate", "--db", url]) == 2
    assert "no ladder tables" in capsys.readouterr().err
    assert schema.revision(url) is None  # left as it was


def test_a_connection_lost_to_a_restart_fails_once_then_connects_again(
    postgres: PostgresServer, postgres_url: str
) -> None:
    db = connect(postgres_url)
    assert db.execute("SELECT 1").fetchone() == (1,)
    postgres.stop()
    try:
        with pytest.raises(PostgresError):
            db.execute("SELECT 1")
        with pytest.raises(PostgresError, match="cannot connect"):
            db.execute("SELECT 1")
    finally:
        postgres.start()
        wait_accepting(postgres)
    assert db.execute("SELECT 1").fetchone() == (1,)
    db.close()
