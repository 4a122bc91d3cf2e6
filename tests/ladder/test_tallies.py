"""The ladder's tallies (games, wins, pizzas per bot and scope; rated matches per scope)
always equal a count over the rated results: they commit with each rating, survive a
crash between a result and its rating, and a restart's recovery. And every read the
server makes while it runs walks an index: none scans the history."""

from __future__ import annotations

import asyncio
import random
import re
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from server.db.ladder import rating as store_module
from server.db.ladder.rows import ALL_PLAYERS, SeatResult, Tally
from server.db.ladder.store import LadderStore
from server.db.writer import Writer
from server.ladder.ladder import Ladder
from server.ladder.lobby import LocalLobby, Table
from server.ladder.matches import MatchEnd
from server.ladder.ratings import Rating, rate
from server.ladder.scheduler import Policy
from server.status import MatchStatus

from .no_matches import NoMatches

BOTS = [f"bot{i}" for i in range(8)]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LadderStore]:
    s = LadderStore(tmp_path / "arena.db")
    yield s
    s.close()


def play(store: LadderStore, match_id: str, rng: random.Random) -> None:
    """Starts and finishes one random match (not rated yet)."""
    names = rng.sample(BOTS, rng.randint(2, 5))
    store.start_match(match_id, names)
    assert store.finish_match(
        match_id, [SeatResult(rng.randint(1, 3), rng.randint(0, 9)) for _ in names]
    )


def assert_tallies_agree(store: LadderStore) -> None:
    """The stored tallies and match counts equal a recount from the rated results, in
    every scope; the standings show them."""
    for players in (ALL_PLAYERS, 2, 3, 4, 5):
        assert store.tallies(players) == store.recount(players), players
        assert store.rated(players) == len(store.rated_results(players)), players
        finished, table = store.standings(players)
        assert finished == store.rated(players)
        counted = store.recount(players)
        for line in table:
            t = counted[line.name]
            assert (line.games, line.wins) == (t.games, t.wins)
            assert line.mean_delivered == pytest.approx(t.delivered / t.games)


def test_tallies_equal_a_recount_whenever_ratings_are_applied(store: LadderStore) -> None:
    rng = random.Random(3)
    for i in range(60):
        play(store, f"m{i}", rng)
        if rng.random() < 0.3:
            store.apply_ratings()
            assert_tallies_agree(store)
    # An aborted match and a running one count for nothing.
    store.start_match("cut", ["bot0", "bot1"])
    store.abort_match("cut")
    store.start_match("live", ["bot2", "bot3"])
    store.apply_ratings()
    assert_tallies_agree(store)
    assert store.player_counts() == sorted({len(r.names) for r in store.rated_results()})
    assert store.games_played() == {n: t.games for n, t in store.recount().items()}


def test_a_result_counts_in_its_scope_and_in_all(store: LadderStore) -> None:
    store.start_match("m1", ["a", "b", "c"])
    store.finish_match("m1", [SeatResult(1, 5), SeatResult(1, 5), SeatResult(3, 2)])
    store.apply_ratings()
    assert (
        store.tallies(3)
        == store.tallies(ALL_PLAYERS)
        == {"a": Tally(1, 1, 5), "b": Tally(1, 1, 5), "c": Tally(1, 0, 2)}
    )
    assert store.tallies(2) == {}
    assert (store.rated(0), store.rated(2), store.rated(3)) == (1, 0, 1)


def test_a_crash_between_a_result_and_its_rating_is_counted_once_at_restart(tmp_path: Path) -> None:
    path = tmp_path / "arena.db"
    store = LadderStore(path)
    rng = random.Random(8)
    for i in range(10):
        play(store, f"m{i}", rng)
    store.apply_ratings()
    play(store, "m10", rng)  # its result is stored, and then the process dies
    store.close()

    again = LadderStore(path)
    assert again.unrated() == 1
    assert again.rated() == 10  # the unrated result is not counted yet
    assert_tallies_agree(again)
    ladder = Ladder(again, NoMatches({}), Policy())
    ladder.recover()
    assert again.unrated() == 0
    assert_tallies_agree(again)
    ladder.recover()  # a second start changes nothing
    assert_tallies_agree(again)
    assert again.rated() == 11
    again.close()


def test_recovery_takes_a_cut_off_result_from_the_servers_record_and_counts_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "arena.db"
    store = LadderStore(path)
    store.start_match("m1", ["a", "b"])
    store.finish_match("m1", [SeatResult(1, 4), SeatResult(2, 1)])
    store.apply_ratings()
    store.start_match("stored", ["a", "b", "c"])  # the server stored its record ...
    store.start_match("lost", ["b", "c"])  # ... this one's it did not
    store.close()  # ... and the process died

    again = LadderStore(path)
    host = NoMatches({"stored": MatchEnd("finished", (2, 1, 3), (3, 6, 0))})
    Ladder(again, host, Policy()).recover()
    stored, lost = again.match("stored"), again.match("lost")
    assert stored is not None and stored.status == MatchStatus.FINISHED
    assert lost is not None and lost.status == MatchStatus.ABORTED
    assert_tallies_agree(again)
    assert again.tallies()["b"] == Tally(2, 1, 7)
    assert again.tallies(3) == {"a": Tally(1, 0, 3), "b": Tally(1, 1, 6), "c": Tally(1, 0, 0)}
    again.close()


def test_a_rating_that_fails_midway_counts_nothing(
    store: LadderStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(1)
    play(store, "m1", rng)
    store.apply_ratings()
    play(store, "m2", rng)
    real = rate
    calls: list[int] = []

    def fail_second(ratings: Sequence[Rating], ranks: Sequence[int]) -> list[Rating]:
        calls.append(1)
        if len(calls) == 2:  # the per-player-count scope, after the "all" scope
            raise RuntimeError("the disk is gone")
        return real(ratings, ranks)

    monkeypatch.setattr(store_module, "rate", fail_second)
    with pytest.raises(RuntimeError, match="disk"):
        store.apply_ratings()
    assert store.unrated() == 1 and store.rated() == 1
    assert_tallies_agree(store)
    monkeypatch.setattr(store_module, "rate", real)
    assert store.apply_ratings() == 1
    assert_tallies_agree(store)


def test_the_scheduler_reads_only_the_waiting_bots(store: LadderStore) -> None:
    store.start_match("m1", ["a", "b"])
    store.finish_match("m1", [SeatResult(1, 4), SeatResult(2, 1)])
    store.apply_ratings()
    waiting = store.waiting(["a", "new", "b"])
    assert set(waiting) == {"a", "b"}
    assert waiting["a"][0] == store.ratings()["a"] and waiting["a"][1] == 1
    writer = Writer()
    lobby = LocalLobby(store, writer, Policy())
    described = {w.name: (w.rating, w.games) for w in lobby._waiting(["a", "new"])}
    writer.close()
    assert described == {"a": (store.ratings()["a"].mu, 1), "new": (25.0, 0)}


def test_match_lists_are_newest_first_by_bot_and_status(store: LadderStore) -> None:
    for i in range(12):
        store.start_match(f"m{i:02}", ["a", "b"] if i % 2 else ["b", "c"])
        if i % 3:
            store.finish_match(f"m{i:02}", [SeatResult(1, 1), SeatResult(2, 0)])
        else:
            store.abort_match(f"m{i:02}")
    everything = [m.match_id for m in store.matches(limit=100)]
    assert everything == [f"m{i:02}" for i in reversed(range(12))]
    assert [m.match_id for m in store.matches(limit=3)] == everything[:3]
    finished = [m.match_id for m in store.matches(status=MatchStatus.FINISHED, limit=100)]
    assert finished == [f"m{i:02}" for i in reversed(range(12)) if i % 3]
    of_a = [m.match_id for m in store.matches("a", limit=100, status=MatchStatus.FINISHED)]
    assert of_a == [f"m{i:02}" for i in reversed(range(12)) if i % 3 and i % 2]
    assert [m.match_id for m in store.matches("a", limit=2)] == ["m11", "m09"]
    row = store.matches("c", limit=1, status=MatchStatus.FINISHED)[0]
    assert row.names == ("b", "c") and row.winners == (0,) and row.players == 2


def traced(store: LadderStore) -> list[str]:
    """Returns every statement the running server's reads and writes issue, as run
    (parameters filled in), over a ladder with some history."""
    rng = random.Random(9)
    for i in range(30):
        play(store, f"h{i}", rng)
    store.apply_ratings()
    seen: list[str] = []
    # The trace is SQLite's: this ladder is an SQLite file.
    db, writes = store._db, store._writes
    assert isinstance(db, sqlite3.Connection) and isinstance(writes, sqlite3.Connection)
    db.set_trace_callback(seen.append)
    writes.set_trace_callback(seen.append)
    key = store.register("newcomer", max_unentered=100)
    store.check_key("newcomer", key)
    store.entered("newcomer")
    store.mark_entered("newcomer", key)
    store.expire(0.0)
    store.start_match("now", ["bot0", "newcomer"])
    store.finish_match("now", [SeatResult(1, 3), SeatResult(2, 2)])
    store.apply_ratings()
    store.start_match("cut", ["bot1", "bot2"])
    store.abort_match("cut")
    for players in (0, 2, 5):
        store.standings(players)
    store.waiting(["bot0", "bot1", "newcomer"])
    store.games_played()
    for name in (None, "bot3"):
        for status in (None, MatchStatus.FINISHED):
            store.matches(name, 5, status)
    store.match("now")
    db.set_trace_callback(None)
    writes.set_trace_callback(None)
    return seen


def test_no_statement_of_the_running_server_scans_or_sorts_the_history(store: LadderStore) -> None:
    statements = [s for s in traced(store) if not re.match(r"\s*(BEGIN|COMMIT|ROLLBACK|PRAGMA)", s)]
    assert len(statements) > 20
    for sql in statements:
        steps = [r[3] for r in store._db.execute(f"EXPLAIN QUERY PLAN {sql}")]
        for step in steps:
            # A walk of an index (in order, or a range of it) is fine; a walk of a
            # table, or a sort, costs the whole history.
            assert "TEMP B-TREE" not in step, (sql, steps)
            # p: a page of matches, up to a limit; a constant row: one match by its id;
            # ladder_leagues: the leagues the server was started with, a handful of rows
            if step.startswith("SCAN") and step not in (
                "SCAN p",
                "SCAN CONSTANT ROW",
                "SCAN ladder_leagues",
            ):
                assert "INDEX" in step or "json_each" in step, (sql, steps)
            if (
                "ladder_matches" in step
                or "ladder_results" in step
                or re.match(r"(SCAN|SEARCH) [mr]\b", step)
            ):
                assert "INDEX" in step, (sql, steps)


def test_the_ladder_reader_reads_on_its_own_thread(store: LadderStore) -> None:
    store.start_match("m1", ["a", "b"])
    store.finish_match("m1", [SeatResult(1, 4), SeatResult(2, 1)])
    store.apply_ratings()
    reader = store.reader()

    async def read() -> None:
        assert await reader.standings() == store.standings()
        assert await reader.matches("a") == store.matches("a")
        assert await reader.match("m1") == store.match("m1")
        assert await reader.match("nope") is None

    asyncio.run(read())
    reader.close()


class PlayingMatches(NoMatches):
    """Matches that end at once, the first seat winning."""

    def __init__(self) -> None:
        super().__init__({})
        self.created = 0

    async def create(
        self,
        names: Sequence[str],
        deal_set: object = None,
        *,
        match_id: str | None = None,
        tokens: Sequence[str] | None = None,
    ) -> tuple[str, list[str], str]:
        self.created += 1
        return f"m-{self.created}", [f"token-{i}" for i in range(len(names))], ""

    async def result(self, match_id: str) -> MatchEnd:
        return MatchEnd("finished", (1, 2), (3, 1))


def test_the_standings_are_read_once_after_each_rated_result(store: LadderStore) -> None:
    ladder = Ladder(store, PlayingMatches(), Policy())

    async def scenario() -> None:
        first = await ladder.standings()
        assert first == (0, []) and await ladder.standings() is first  # from memory
        await ladder._play(Table(("a", "b")))  # a match is played, stored and rated
        after = await ladder.standings()
        assert after == store.standings() and after[0] == 1
        assert await ladder.standings() is after
        assert await ladder.standings(2) == store.standings(2)
        await ladder._play(Table(("b", "a")))
        assert (await ladder.standings())[0] == 2
        assert await ladder.standings(2) == store.standings(2)

    asyncio.run(scenario())
    ladder.reader.close()
