"""Ladder storage and ratings: written once, rated once, in order, and recomputable;
on an SQLite file and on PostgreSQL (the ``database`` fixture, tests/storage/postgres.py)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.db.connection import connect
from server.db.ladder.rows import LadderError, NameTakenError, SeatResult
from server.db.ladder.store import LadderStore
from server.ladder.ratings import Result, initial, rate, replay


@pytest.fixture
def store(database: str) -> Iterator[LadderStore]:
    s = LadderStore(database)
    yield s
    s.close()


def finish(store: LadderStore, match_id: str, names: list[str], ranks: list[int]) -> bool:
    store.start_match(match_id, names)
    return store.finish_match(match_id, [SeatResult(k, 4 - k) for k in ranks])


def test_register_returns_a_key_that_only_that_bot_can_use(
    store: LadderStore, database: str
) -> None:
    key = store.register("alice")
    assert store.check_key("alice", key)
    assert not store.check_key("alice", key + "x")
    assert not store.check_key("bob", key)
    db = connect(database)
    stored = db.execute("SELECT key_hash FROM ladder_bots").fetchone()[0]
    db.close()
    assert key not in stored


def test_a_taken_name_or_a_bad_name_is_refused(store: LadderStore) -> None:
    store.register("alice")
    with pytest.raises(NameTakenError, match="'alice'"):
        store.register("alice")
    for bad in ["", "a b", "x" * 33, "naïve"]:
        with pytest.raises(LadderError, match="bot name"):
            store.register(bad)


def test_a_result_written_twice_changes_nothing(store: LadderStore) -> None:
    assert finish(store, "m1", ["a", "b", "c"], [1, 2, 2])
    assert not store.finish_match("m1", [SeatResult(3, 0), SeatResult(1, 9), SeatResult(2, 0)])
    store.start_match("m1", ["x", "y", "z"])
    assert store.apply_ratings() == 1
    assert store.apply_ratings() == 0
    assert store.rated_results() == [Result(("a", "b", "c"), (1, 2, 2))]


def test_an_aborted_match_is_never_rated(store: LadderStore) -> None:
    store.start_match("m1", ["a", "b"])
    assert store.running() == ["m1"]
    assert store.abort_match("m1")
    assert not store.finish_match("m1", [SeatResult(1, 2), SeatResult(2, 1)])
    assert store.apply_ratings() == 0
    assert store.running() == []
    assert store.standings() == (0, [])


def test_ratings_follow_finish_order_not_creation_order(store: LadderStore) -> None:
    store.start_match("first-created", ["a", "b"])
    finish(store, "second-created", ["a", "b"], [2, 1])
    store.finish_match("first-created", [SeatResult(1, 3), SeatResult(2, 1)])
    store.apply_ratings()
    expected = replay([Result(("a", "b"), (2, 1)), Result(("a", "b"), (1, 2))])
    assert store.ratings() == expected


def test_ratings_are_kept_per_player_count(store: LadderStore) -> None:
    finish(store, "m1", ["a", "b"], [1, 2])
    finish(store, "m2", ["a", "b", "c"], [3, 1, 2])
    store.apply_ratings()
    assert store.ratings(2) == replay([Result(("a", "b"), (1, 2))])
    assert store.ratings(3) == replay([Result(("a", "b", "c"), (3, 1, 2))])
    assert store.player_counts() == [2, 3]
    finished, table = store.standings(3)
    assert finished == 1 and [s.name for s in table] == ["b", "c", "a"]


def test_standings_rank_by_conservative_rating_and_count_games_wins_pizzas(
    store: LadderStore,
) -> None:
    rng = random.Random(5)
    for i in range(30):
        names = ["strong", "middle", "weak"]
        rng.shuffle(names)
        ranks = [{"strong": 1, "middle": 2, "weak": 3}[n] for n in names]
        finish(store, f"m{i}", names, ranks)
    store.apply_ratings()
    finished, table = store.standings()
    assert finished == 30
    assert [s.name for s in table] == ["strong", "middle", "weak"]
    assert [s.rank for s in table] == [1, 2, 3]
    top = table[0]
    assert (top.games, top.wins, top.mean_delivered) == (30, 30, 3.0)
    assert store.games_played() == {"strong": 30, "middle": 30, "weak": 30}
    assert top.rating == pytest.approx(top.mu - 3 * top.sigma)
    assert table[2].wins == 0 and table[2].mean_delivered == 1.0


def test_a_shared_win_is_a_win_and_a_tie(store: LadderStore) -> None:
    finish(store, "m1", ["a", "b"], [1, 1])
    store.apply_ratings()
    _, table = store.standings()
    assert [s.wins for s in table] == [1, 1]
    assert table[0].mu == pytest.approx(table[1].mu)


def test_rerating_stored_results_arrives_at_the_stored_ratings(database: str) -> None:
    store = LadderStore(database)
    rng = random.Random(11)
    bots = [f"bot{i}" for i in range(7)]
    for i in range(40):
        names = rng.sample(bots, rng.randint(2, 5))
        finish(store, f"m{i}", names, [rng.randint(1, 3) for _ in names])
        if i % 7 == 0:
            store.apply_ratings()
    store.apply_ratings()
    store.close()
    # A fresh connection, as `mammamia ladder rerate` opens it.
    reopened = LadderStore(database)
    for players in [0, *reopened.player_counts()]:
        recomputed = replay(reopened.rated_results(players))
        stored = reopened.ratings(players)
        assert recomputed.keys() == stored.keys()
        assert all(recomputed[n].agrees(stored[n]) for n in stored)


def test_matches_lists_a_bots_matches_newest_first(store: LadderStore) -> None:
    finish(store, "m1", ["a", "b"], [1, 2])
    finish(store, "m2", ["b", "c"], [1, 1])
    store.start_match("m3", ["a", "c"])
    assert [m.match_id for m in store.matches("a")] == ["m3", "m1"]
    m2 = store.match("m2")
    assert m2 is not None and m2.winners == (0, 1) and m2.status == "finished"
    m3 = store.match("m3")
    assert m3 is not None and m3.winners == ()
    assert store.match("nope") is None


def test_rate_favours_the_better_rank() -> None:
    a, b = rate([initial(), initial()], [1, 2])
    assert a.mu > initial().mu > b.mu
    with pytest.raises(ValueError, match="2\\+ seats"):
        rate([initial()], [1])


def test_rerate_command_says_whether_the_stored_ratings_agree(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mammamia.cli import main

    path = database
    store = LadderStore(path)
    finish(store, "m1", ["a", "b", "c"], [1, 2, 3])
    finish(store, "m2", ["a", "b"], [2, 1])
    store.apply_ratings()
    finish(store, "m3", ["b", "c"], [1, 2])  # finished, not yet rated
    store.close()
    assert main(["ladder", "rerate", "--db", str(path)]) == 0
    out = capsys.readouterr().out
    assert "all matches: 2 results, 3 bots: ratings agree" in out
    assert "3-player matches: 1 result, 3 bots: ratings agree" in out
    assert "1 finished result not rated yet" in out
    assert out.rstrip().endswith("rerate agrees with the stored ratings and tallies")

    db = connect(path)
    db.execute("UPDATE ladder_ratings SET mu = mu + 0.001 WHERE name = 'a' AND players = 2")
    db.close()
    assert main(["ladder", "rerate", "--db", str(path)]) == 1
    out = capsys.readouterr().out
    assert "2-player matches: 1 result, 2 bots: ratings DIFFER for a" in out
    assert "all matches: 2 results, 3 bots: ratings agree" in out

    assert main(["ladder", "rerate", "--db", str(tmp_path / "missing.db")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_rerate_refuses_a_file_that_is_not_a_ladder_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mammamia.cli import main

    text = tmp_path / "notes.txt"
    text.write_text("not a database, though long enough to look like one " * 40)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    for path, words in [
        (text, "not a readable SQLite database"),
        (other, "no ladder tables"),
        (tmp_path, "no such file"),
    ]:
        assert main(["ladder", "rerate", "--db", str(path)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and words in err, err
    # The other database was left as it was.
    with sqlite3.connect(other) as db:
        assert [n for (n,) in db.execute("SELECT name FROM sqlite_master")] == ["t"]
