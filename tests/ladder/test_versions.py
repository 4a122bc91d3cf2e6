"""Versions of a ladder bot: two versions of one name, entered one after the other
on a real server, are rated apart and keep their own records; the standings show
the bot by its best or its newest version, its statistics list both, and
``mammamia ladder rerate`` agrees with the live ratings. The store's side runs on
SQLite and PostgreSQL alike."""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.db.ladder.rows import SeatResult, player
from server.db.ladder.store import LadderStore
from server.ladder.cli import _compare
from server.ladder.ratings import replay

from .conftest import MAMMAMIA, wait_until

if TYPE_CHECKING:
    from tests.conftest import RunningServer

HASH = re.compile(r"[0-9a-f]{12}")


def _stats(address: str, name: str) -> pb.BotStatsResponse:
    with grpc.insecure_channel(address) as channel:
        reply: pb.BotStatsResponse = pb_grpc.LadderStub(channel).BotStats(
            pb.BotStatsRequest(name=name), timeout=10
        )
        return reply


def _games(address: str, name: str, version: str) -> int:
    return sum(v.games for v in _stats(address, name).versions if v.version == version)


def test_two_versions_of_one_bot_are_rated_apart_and_shown_side_by_side(
    start_server: Callable[..., RunningServer],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    server = start_server(ladder_concurrency=2, ladder_players="2")
    ladder_bots(server.address, {"rival-1": "random", "rival-2": "random"})
    first = ladder_bots(server.address, {"mine": "greedy"}, "--version", "v1")["mine"]
    wait_until(lambda: _games(server.address, "mine", "v1") >= 3, 120, "three games of v1")
    first.send_signal(signal.SIGINT)  # leaves the ladder, its match played out
    first.wait(timeout=60)
    ladder_bots(server.address, {"mine": "counter"}, "--version", "v2")  # the same key file
    wait_until(lambda: _games(server.address, "mine", "v2") >= 3, 120, "three games of v2")

    with grpc.insecure_channel(server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        best = ladder.Standings(pb.StandingsRequest(), timeout=10)
        newest = ladder.Standings(pb.StandingsRequest(by=pb.STANDINGS_BY_NEWEST), timeout=10)
        results = ladder.Results(pb.ResultsRequest(page_size=1000), timeout=10)
    stats = _stats(server.address, "mine")

    # Side by side: each version its own rating and record, the first one first.
    assert [v.version for v in stats.versions] == ["v1", "v2"]
    v1, v2 = stats.versions
    assert v1.first_played.ToNanoseconds() <= v1.last_played.ToNanoseconds()
    assert v1.last_played.ToNanoseconds() <= v2.first_played.ToNanoseconds()
    for v in stats.versions:
        assert abs(v.rating - (v.mu - 3 * v.sigma)) < 1e-9 and v.low < v.mu < v.high
    assert v1.mu != v2.mu or v1.sigma != v2.sigma
    # Each result names the version that played it; the records add up per version.
    seats = [s for m in results.matches if m.rated for s in m.seats if s.name == "mine"]
    assert {v.version: v.games for v in stats.versions} == {
        version: sum(1 for s in seats if s.version == version) for version in ("v1", "v2")
    }
    assert stats.tallies[0].games == v1.games + v2.games
    # Bots entered without --version: a hash of the code that defines their class.
    rival = {s.version for m in results.matches for s in m.seats if s.name == "rival-1"}
    assert len(rival) == 1 and HASH.fullmatch(rival.pop())

    # The standings: one line per bot, by its best version, or by its newest.
    assert best.by == pb.STANDINGS_BY_BEST and newest.by == pb.STANDINGS_BY_NEWEST
    line = {s.name: s for s in best.standings}["mine"]
    assert line.versions == 2
    assert line.version == max(stats.versions, key=lambda v: v.rating).version
    assert {s.name: s for s in newest.standings}["mine"].version == "v2"
    assert sorted(s.name for s in best.standings) == ["mine", "rival-1", "rival-2"]

    # The bot's statistics and the standings on the command line.
    shown = subprocess.run(
        [str(MAMMAMIA), "ladder", "bot", "--server", server.address, "--name", "mine"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert re.search(r"^\s*v1\s", shown, re.M) and re.search(r"^\s*v2\s", shown, re.M), shown
    table = subprocess.run(
        [str(MAMMAMIA), "ladder", "standings", "--server", server.address, "--by", "newest"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert "newest" in table and re.search(r"mine\s+v2", table), table

    # Rerating from the stored results agrees with the live ratings, versions apart.
    rerate = subprocess.run(
        [str(MAMMAMIA), "ladder", "rerate", "--db", str(server.db_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rerate.returncode == 0, rerate.stdout + rerate.stderr

    # A version the contract does not allow is refused before the bot enters.
    key = (tmp_path / "mine.key").read_text().strip()
    with grpc.insecure_channel(server.address) as channel:
        entry = pb_grpc.LadderStub(channel).Enter(
            pb.EnterRequest(name="mine", version="not a version"),
            metadata=(("bot-key", key),),
            timeout=10,
        )
        try:
            next(iter(entry))
            raise AssertionError("entered with a bad version")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
            assert "version" in (e.details() or "")


def test_versions_are_players_of_their_own_in_the_store_and_the_replay(database: str) -> None:
    store = LadderStore(database)
    try:
        for name in ("mine", "rival"):
            store.register(name)
        store.enter_version("mine", "v1")
        for i in range(3):
            store.start_match(f"a{i}", ["mine", "rival"])
            store.finish_match(f"a{i}", [SeatResult(1, 3), SeatResult(2, 1)])
        store.enter_version("mine", "v2")
        assert store.version("mine") == "v2"
        for i in range(2):
            store.start_match(f"b{i}", ["rival", "mine"])
            store.finish_match(f"b{i}", [SeatResult(1, 2), SeatResult(2, 0)])
        store.apply_ratings()

        ratings = store.ratings()
        assert ratings.keys() == {"mine@v1", "mine@v2", "rival"}
        assert ratings["mine@v1"].mu > ratings["mine@v2"].mu
        assert ratings == replay(store.rated_results())
        assert [(v.version, v.games, v.wins) for v in store.versions("mine")] == [
            ("v1", 3, 3),
            ("v2", 2, 0),
        ]
        assert store.bot_tallies("mine")[0].games == 5
        assert store.tallies() == store.recount()
        assert store.stored_positions() == store.recount_positions()
        # The scheduler rates a waiting bot by the version it entered with last.
        assert store.waiting(["mine"])["mine"][0] == ratings[player("mine", "v2")]
        (_, best), (_, newest) = store.standings(), store.standings(by="newest")
        assert {s.name: s.version for s in best}["mine"] == "v1"
        assert {s.name: s.version for s in newest}["mine"] == "v2"
        assert {s.name: s.versions for s in best} == {"mine": 2, "rival": 1}
        with store.snapshot():
            assert _compare(store)
    finally:
        store.close()
