"""Results by seat position: tallied with the other tallies when a result is rated,
counted afresh the same, filled by migration 0005 from the stored records; on an
SQLite file and on PostgreSQL. And the --ladder-duplicate flag and its variable, and a
ladder of duplicate sets on PostgreSQL scheduled as one host's."""

from __future__ import annotations

import argparse
import json

import pytest

from server.db import schema
from server.db.connection import connect, transaction
from server.db.ladder.rows import PositionTally, Tally
from server.db.ladder.store import LadderStore
from server.ladder.ladder import Ladder
from server.ladder.lobby import LocalLobby
from server.ladder.matches import MatchEnd
from server.ladder.scheduler import Policy
from server.ladder.serve import add_arguments
from server.ladder.shared_lobby import SharedLobby

from .no_matches import NoMatches


def test_positions_count_from_round_ones_first_player(database: str) -> None:
    # Seat 2 started round 1: it is position 1, seat 0 position 2, seat 1 position 3.
    assert [s.position for s in MatchEnd("finished", (1, 2, 3), (5, 3, 1), 2).seats()] == [2, 3, 1]
    assert [s.position for s in MatchEnd("finished", (1, 2), (5, 3)).seats()] == [None, None]
    store = LadderStore(database)
    try:
        store.start_match("m1", ["a", "b", "c"])
        store.finish_match("m1", MatchEnd("finished", (1, 2, 3), (5, 3, 1), 2).seats())
        store.start_match("m2", ["b", "a"])
        store.finish_match("m2", MatchEnd("finished", (1, 1), (4, 4), 0).seats())
        store.start_match("m3", ["a", "b"])
        store.finish_match("m3", MatchEnd("finished", (2, 1), (1, 6), 0).seats())
        assert store.apply_ratings() == 3
        assert store.positions("a") == [
            PositionTally(2, 1, 1, 0, 2),
            PositionTally(2, 2, 1, 1, 1),
            PositionTally(3, 2, 1, 1, 1),
        ]
        assert store.bot_tallies("a") == {0: Tally(3, 2, 10), 2: Tally(2, 1, 5), 3: Tally(1, 1, 5)}
        # Per player count, the positions add up to the tallies.
        for name in "abc":
            tallies = store.bot_tallies(name)
            for players, tally in tallies.items():
                if players:
                    seats = [p for p in store.positions(name) if p.players == players]
                    assert sum(p.games for p in seats) == tally.games
                    assert sum(p.wins for p in seats) == tally.wins
        assert store.stored_positions() == store.recount_positions()
        assert store.positions("c")[0].mean_rank == 3.0
    finally:
        store.close()


def test_migration_0005_fills_positions_from_the_stored_records(postgres_or_file: str) -> None:
    target = postgres_or_file
    schema.upgrade(target, "0004")
    db = connect(target)
    try:
        with transaction(db):
            for match_id, first, ranks in (("m1", 1, (2, 1)), ("m2", 0, (1, 2))):
                db.execute(
                    "INSERT INTO ladder_matches (match_id, players, status, created,"
                    " finish_order, rated) VALUES (?, 2, 'finished', 1.0, ?, 1)",
                    (match_id, int(match_id[1])),
                )
                db.executemany(
                    "INSERT INTO ladder_results (match_id, seat, name, rank,"
                    " delivered, created) VALUES (?, ?, ?, ?, 3, 1.0)",
                    [
                        (match_id, s, n, k)
                        for s, (n, k) in enumerate(zip(("a", "b"), ranks, strict=True))
                    ],
                )
                db.execute(
                    "INSERT INTO matches (id, status, players, names, ladder, created,"
                    " record) VALUES (?, 'finished', 2, '[]', 1, '2026-01-01', ?)",
                    (match_id, json.dumps({"first_player": first})),
                )
    finally:
        db.close()
    assert schema.upgrade(target)
    store = LadderStore(target)
    try:
        # m1: seat 1 (b) started, so a was second and won nothing; m2: a started and won.
        assert store.positions("a") == [PositionTally(2, 1, 1, 1, 1), PositionTally(2, 2, 1, 0, 2)]
        assert store.stored_positions() == store.recount_positions()
        assert store.playing_sets() == []
        m1 = store.match("m1")
        assert m1 is not None and m1.set_id is None
    finally:
        store.close()
    schema.downgrade(target, "0004")
    assert schema.revision(target) == "0004"


@pytest.fixture(params=["sqlite", "postgresql"])
def postgres_or_file(request: pytest.FixtureRequest, tmp_path: object) -> str:
    """Returns an empty database: a new SQLite file, or an empty PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "arena.db")  # type: ignore[operator]
    server = request.getfixturevalue("postgres")
    return str(server.database(migrated=False))


def test_the_duplicate_flag_is_off_unless_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    def parsed(*argv: str) -> bool:
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        return bool(parser.parse_args(list(argv)).ladder_duplicate)

    monkeypatch.delenv("MAMMAMIA_LADDER_DUPLICATE", raising=False)
    assert not parsed()
    assert parsed("--ladder-duplicate")
    assert not parsed("--ladder-duplicate", "off")
    monkeypatch.setenv("MAMMAMIA_LADDER_DUPLICATE", "on")
    assert parsed()
    assert not parsed("--ladder-duplicate=off")
    monkeypatch.setenv("MAMMAMIA_LADDER_DUPLICATE", "maybe")
    with pytest.raises(SystemExit):
        parsed()


def test_a_ladder_of_duplicate_sets_on_postgresql_is_one_hosts(postgres_url: str) -> None:
    # Sets are not scheduled across hosts: with them, the ladder schedules as on a file.
    store = LadderStore(postgres_url)
    ladders = [
        Ladder(store, NoMatches(), Policy(), duplicate=duplicate) for duplicate in (True, False)
    ]
    try:
        assert store.shared
        assert [type(ladder.lobby) for ladder in ladders] == [LocalLobby, SharedLobby]
    finally:
        for ladder in ladders:
            ladder.reader.close()
        store.close()
