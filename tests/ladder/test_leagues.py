"""Leagues with boss bots (``mammamia serve --leagues``): the flag, tables formed
inside a league, moves decided and stamped where a match is rated (on an SQLite file
and on PostgreSQL), and a real server on which a strong bot entered in the lowest
league rises past its bosses and is shown there (gRPC, the command, the web API)."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from server.db.connection import connect
from server.db.ladder.leagues import League
from server.db.ladder.rows import LadderError, SeatResult
from server.db.ladder.store import LadderStore
from server.db.matches import Storage
from server.ladder.ladder import Ladder
from server.ladder.leagues import Bosses, parse_leagues
from server.ladder.lobby import NotFreeError
from server.ladder.matches import ServerMatches
from server.ladder.scheduler import Policy, Waiting, form_matches
from server.runners import Runners
from tests.ports import restartable_port

from .conftest import MAMMAMIA, query, standings, wait_until

if TYPE_CHECKING:
    from tests.conftest import RunningServer

# -- the flag --------------------------------------------------------------------------


def test_the_leagues_flag_names_leagues_lowest_first_each_with_its_boss() -> None:
    assert parse_leagues("") == []
    assert parse_leagues("wood=random bronze=search@budget_ms=5 top", 1.5) == [
        League("wood", "wood-boss", "random", 1.5),
        League("bronze", "bronze-boss", "search@budget_ms=5", 1.5),
        League("top", None, None, 1.5),
    ]
    for bad, why in [
        ("wood=random", "at least two"),
        ("wood bronze=greedy", "needs a boss"),
        ("wood=random wood=greedy", "named twice"),
        ("wood=random bronze=alphago", "no built-in bot 'alphago'"),
        ("wood=random bronze=search@budget=5", "search@budget=5"),
        ("wood=random b/ad=greedy", "letters, digits"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_leagues(bad)
    # Without the package's entry points (an install older than leagues), it says so.
    with pytest.raises(ValueError, match=r"none is installed \(the mammamia\.bosses entry points"):
        parse_leagues("wood=random top", known={})


def test_a_bad_leagues_flag_stops_the_server_before_it_starts(tmp_path: Any) -> None:
    done = subprocess.run(
        [str(MAMMAMIA), "serve", "--db", str(tmp_path / "l.db"), "--leagues", "wood bronze=x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--leagues" in done.stderr and "needs a boss" in done.stderr


# -- the scheduler ---------------------------------------------------------------------


def test_tables_are_formed_inside_one_league() -> None:
    rng = random.Random(7)
    waiting = [Waiting(f"b{i}", 25.0, i % 3, league=i % 3) for i in range(12)]
    waiting.append(Waiting("alone", 25.0, 0, league=3))  # no one else in its league
    for _ in range(50):
        for table in form_matches(waiting, Policy(2, 4, concurrency=6), 0, rng):
            assert len({int(n[1:]) % 3 for n in table}) == 1, table
            assert "alone" not in table
    # Without leagues (all in the lowest), the same seeds give the same tables as before.
    plain = [Waiting(w.name, w.rating, w.games) for w in waiting]
    assert form_matches(plain, Policy(2, 4), 0, random.Random(3)) == form_matches(
        [Waiting(w.name, w.rating, w.games, 0) for w in waiting], Policy(2, 4), 0, random.Random(3)
    )


# -- moves, in the store ---------------------------------------------------------------

LEAGUES = [
    League("wood", "wood-boss", "random", 0.0),
    League("bronze", "bronze-boss", "greedy", 0.0),
    League("top", None, None, 0.0),
]


@pytest.fixture
def store(database: str) -> Iterator[LadderStore]:
    s = LadderStore(database)
    yield s
    s.close()


def play(store: LadderStore, match_id: str, winner: str, loser: str) -> None:
    store.start_match(match_id, [winner, loser])
    assert store.finish_match(match_id, [SeatResult(1, 5), SeatResult(2, 1)])
    store.apply_ratings()


def test_a_bot_moves_up_once_its_lower_bound_passes_its_boss_and_the_move_is_stamped(
    store: LadderStore,
) -> None:
    store.configure_leagues(LEAGUES)
    store.register("ace")
    assert store.league_places(["ace", "wood-boss", "bronze-boss"]) == {
        "ace": 0,
        "wood-boss": 0,
        "bronze-boss": 1,
    }
    assert store.moves() == []
    play(store, "m1", "wood-boss", "ace")  # a loss: its mu falls below the boss's
    assert store.league_places(["ace"]) == {"ace": 0} and store.moves() == []
    play(store, "m2", "ace", "wood-boss")
    assert store.league_places(["ace"]) == {"ace": 1}
    (move,) = store.moves()
    ended = query_one(store, "SELECT ended FROM ladder_matches WHERE match_id = 'm2'")
    assert (move.name, move.from_league, move.to_league, move.at) == (
        "ace",
        "wood",
        "bronze",
        ended,
    )
    assert "passed wood-boss's" in move.why and move.match_id == "m2"
    play(store, "m3", "ace", "bronze-boss")
    assert store.league_places(["ace"]) == {"ace": 2}
    # The top league has no boss: nothing left to pass, and bosses never move.
    play(store, "m4", "ace", "bronze-boss")
    play(store, "m5", "bronze-boss", "wood-boss")
    assert [m.to_league for m in store.moves()] == ["top", "bronze"]
    assert store.league_places(["wood-boss", "bronze-boss"]) == {"wood-boss": 0, "bronze-boss": 1}
    lines = {s.name: s.league for s in store.standings()[1]}
    assert lines == {"ace": "top", "wood-boss": "wood", "bronze-boss": "bronze"}

    # Voiding a match replays the ratings from the start, and the moves with them:
    # the same moves, at the same times, whichever matches still count.
    before = store.moves()
    assert store.void_match("m5", "a fault", "organiser", 0.0)
    assert store.moves() == before


def query_one(store: LadderStore, sql: str, *params: Any) -> Any:
    return store._db.execute(sql, params).fetchone()[0]


def test_a_boss_name_that_a_bot_registered_is_refused(store: LadderStore) -> None:
    store.register("wood-boss")
    with pytest.raises(LadderError, match="'wood-boss' is a registered bot's"):
        store.configure_leagues(LEAGUES)
    assert store.leagues() == []


def test_leagues_off_leave_every_bot_in_one_pool_and_a_pass_seats_a_boss_in_its_league(
    store: LadderStore,
) -> None:
    store.configure_leagues(LEAGUES)
    for name in ("ace", "bea"):
        store.register(name)
        store.enter(name, "host-a", f"s-{name}", 100.0)
    seen: list[list[tuple[str, int]]] = []

    def form(waiting: list[tuple[str, Any, int, int]]) -> list[tuple[str, ...]]:
        seen.append(sorted((n, league) for n, _, _, league in waiting))
        return form_matches(
            [Waiting(n, r.mu, g, league) for n, r, g, league in waiting],
            Policy(3, 3),
            3,
            random.Random(1),
        )

    ids = iter(range(10))
    (formed,) = store.take(
        "host-a", "a:1", 90.0, form, lambda n: (f"m{next(ids)}", [f"t{i}" for i in range(n)])
    )
    # Both bots start in wood; both bosses wait (no Enter stream), each in its league.
    assert seen[0] == [("ace", 0), ("bea", 0), ("bronze-boss", 1), ("wood-boss", 0)]
    assert sorted(formed.names) == ["ace", "bea", "wood-boss"]
    store.configure_leagues([])
    assert store.leagues() == [] and store.league_places(["ace"]) == {}
    assert {s.league for s in store.standings()[1]} <= {""}


# -- a real server ---------------------------------------------------------------------


def test_a_strong_bot_entered_in_the_lowest_league_rises_past_its_bosses(
    start_server: Callable[..., RunningServer],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    # Weak bosses and a generous bound (mu alone, sigmas 0) keep it quick: counter
    # beats random and greedy in most 2-player matches, and a loss only delays it.
    server = start_server(
        ladder_players="2",
        ladder_start_timeout=5,
        leagues="wood=random bronze=greedy top",
        league_sigmas=0,
        web_port=0,
    )
    ladder_bots(server.address, {"strong": "counter"})

    def risen() -> Any:
        reply = standings(server.address)
        lines = {s.name: s for s in reply.standings}
        return reply if "strong" in lines and lines["strong"].league == "top" else None

    reply = wait_until(risen, 90, "the strong bot in the top league")
    assert [(g.name, g.boss, g.bot) for g in reply.leagues] == [
        ("wood", "wood-boss", "random"),
        ("bronze", "bronze-boss", "greedy"),
        ("top", "", ""),
    ]
    assert {s.name: s.league for s in reply.standings} == {
        "strong": "top",
        "wood-boss": "wood",
        "bronze-boss": "bronze",
    }
    # Every move is stamped, newest first: one league at a time, each after a match
    # against that league's boss, which the boss played (the server's own seat).
    moves = list(reply.moves)
    assert [(m.name, m.from_league, m.to_league) for m in moves] == [
        ("strong", "bronze", "top"),
        ("strong", "wood", "bronze"),
    ]
    assert moves[0].at >= moves[1].at > 0
    assert "passed bronze-boss's" in moves[0].why and "passed wood-boss's" in moves[1].why
    for move, boss in zip(moves, ("bronze-boss", "wood-boss"), strict=True):
        seats = query(
            server.db_path,
            "SELECT r.name, r.autopilot, m.ended FROM ladder_results r JOIN ladder_matches m"
            " ON m.match_id = r.match_id WHERE r.match_id = ?",
            move.match_id,
        )
        assert sorted(n for n, _, _ in seats) == sorted(["strong", boss])
        assert all(autopilot == 0 and ended == move.at for _, autopilot, ended in seats)
    stamped = query(server.db_path, "SELECT name, from_league, to_league, at FROM ladder_moves")
    assert sorted(stamped) == sorted((m.name, m.from_league, m.to_league, m.at) for m in moves)
    # The bosses never met: they are in different leagues.
    met = query(
        server.db_path,
        "SELECT COUNT(*) FROM ladder_results a JOIN ladder_results b"
        " ON a.match_id = b.match_id WHERE a.name = 'wood-boss' AND b.name = 'bronze-boss'",
    )
    assert met == [(0,)]

    # The command shows each bot's league, the leagues and the moves.
    done = subprocess.run(
        [str(MAMMAMIA), "ladder", "standings", "--server", server.address],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()[1:4]
    assert header.split()[:3] == ["rank", "name", "league"]
    assert any(r.split()[1:3] == ["strong", "top"] for r in rows), done.stdout
    assert "leagues: wood (boss wood-boss: random) < bronze (boss bronze-boss: greedy) < top" in (
        done.stdout
    )
    assert "strong bronze -> top: its lower bound" in done.stdout
    done = subprocess.run(
        [str(MAMMAMIA), "ladder", "standings", "--server", server.address, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    data = json.loads(done.stdout)
    assert {s["name"]: s["league"] for s in data["standings"]}["strong"] == "top"
    assert [m["to"] for m in data["moves"]] == ["top", "bronze"]

    # The web page's JSON: the league on each line, the leagues, the moves; the bot's
    # page lists its own moves.
    url = web_url(server)
    with urllib.request.urlopen(url + "api/standings", timeout=10) as r:
        page = json.loads(r.read())
    rows_json = {s["name"]: s for s in page["scopes"][0]["rows"]}
    assert rows_json["strong"]["league"] == "top" and rows_json["wood-boss"]["league"] == "wood"
    assert [g["name"] for g in page["leagues"]] == ["wood", "bronze", "top"]
    assert [(m["name"], m["to"]) for m in page["moves"]] == [
        ("strong", "top"),
        ("strong", "bronze"),
    ]
    with urllib.request.urlopen(url + "api/bots/strong", timeout=10) as r:
        bot = json.loads(r.read())
    assert bot["overall"]["league"] == "top" and len(bot["moves"]) == 2

    # A scrimmage may name a boss: the server plays it there too (no seat on autopilot),
    # and nothing is rated or moved.
    done = subprocess.run(
        [
            str(MAMMAMIA),
            "ladder",
            "challenge",
            "--server",
            server.address,
            "--name",
            "strong",
            "--key-file",
            str(tmp_path / "strong.key"),
            "--matches",
            "2",
            "--json",
            "bronze-boss",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    records = query(
        server.db_path,
        "SELECT m.record FROM scrimmage_matches s JOIN matches m ON m.id = s.match_id",
    )
    assert len(records) == 2
    for (record,) in records:
        assert not json.loads(record)["meta"].get("autopilot"), record
    assert standings(server.address).matches_finished == reply.matches_finished
    assert server.stop() == 0


def test_on_two_hosts_sharing_postgresql_bots_rise_each_move_decided_once(
    postgres_url: str,
    start_server: Callable[..., RunningServer],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
) -> None:
    hosts = [
        start_server(
            db=postgres_url,
            args=["--host-id", name],
            ladder_players="2",
            leagues="wood=random bronze=greedy top",
            league_sigmas=0,
        )
        for name in ("host-a", "host-b")
    ]
    ladder_bots(hosts[0].address, {"strong-a": "counter"})
    ladder_bots(hosts[1].address, {"strong-b": "counter"})

    def risen() -> Any:
        reply = standings(hosts[1].address)
        tops = {s.name for s in reply.standings if s.league == "top"}
        return reply if tops == {"strong-a", "strong-b"} else None

    reply = wait_until(risen, 120, "both bots in the top league")
    # Each move once, whichever host rated the match: two moves a bot.
    moves = sorted((m.name, m.from_league, m.to_league) for m in reply.moves)
    assert moves == [
        ("strong-a", "bronze", "top"),
        ("strong-a", "wood", "bronze"),
        ("strong-b", "bronze", "top"),
        ("strong-b", "wood", "bronze"),
    ]
    db = connect(postgres_url)
    try:
        # The bosses waited in the database with no Enter stream; the host that formed
        # each of their tables played their seat.
        played = db.execute(
            "SELECT r.name, r.autopilot, m.host FROM ladder_results r"
            " JOIN ladder_matches m ON m.match_id = r.match_id"
            " WHERE m.status = 'finished' AND r.name IN ('wood-boss', 'bronze-boss')"
        ).fetchall()
    finally:
        db.close()
    assert {name for name, _, _ in played} == {"wood-boss", "bronze-boss"}
    assert all(autopilot == 0 for _, autopilot, _ in played), played
    assert {host for _, _, host in played} <= {"host-a", "host-b"}
    for host in hosts:
        assert host.stop() == 0


SLOW_BOT = f"{Path(__file__).resolve().parents[1] / 'web' / 'slow_bot.py'}:SlowBot"


def test_a_boss_plays_on_in_a_match_resumed_after_a_crash(
    start_server: Callable[..., RunningServer],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
) -> None:
    # A slow bot (a tenth of a second a decision) makes matches last; a wide bound
    # keeps it in wood with the boss; a short deadline would put a boss's seat that no
    # one plays on autopilot after three missed decisions.
    server = start_server(
        port=restartable_port(),
        ladder_players="2",
        ladder_deadline_ms=300,
        leagues="wood=random top",
        league_sigmas=10,
    )
    ladder_bots(server.address, {"slow": SLOW_BOT})

    def in_flight() -> list[tuple[str]]:
        return query(
            server.db_path,
            "SELECT l.match_id FROM ladder_matches l JOIN matches m ON m.id = l.match_id"
            " WHERE l.status = 'running' AND m.status = 'running'",
        )

    cut: set[str] = set()
    for _attempt in range(5):
        wait_until(in_flight, 60, "a ladder match in flight")
        server.kill()
        cut = {m for (m,) in in_flight()}
        server.start()
        if cut:
            break
    assert cut, "no kill -9 caught a ladder match in flight"
    (match_id,) = cut

    def ended() -> bool:
        rows = query(
            server.db_path, "SELECT status FROM ladder_matches WHERE match_id = ?", match_id
        )
        return rows == [("finished",)]

    wait_until(ended, 90, "the resumed match's end")
    seats = dict(
        query(
            server.db_path,
            "SELECT name, autopilot FROM ladder_results WHERE match_id = ?",
            match_id,
        )
    )
    # (The slow bot, reconnecting after the crash, may have missed its own.)
    assert set(seats) == {"slow", "wood-boss"} and seats["wood-boss"] == 0, seats
    assert server.stop() == 0


def web_url(server: RunningServer) -> str:
    """Returns the address the server logged for its web page."""

    def logged() -> str | None:
        for line in server.logs().splitlines():
            if '"web_serving"' in line:
                return str(json.loads(line)["url"])
        return None

    return str(wait_until(logged, 10, "the web_serving log line"))


def test_a_boss_is_never_lent_for_a_match_of_its_own(tmp_path: Path) -> None:
    async def go() -> None:
        db = tmp_path / "arena.db"
        runners = Runners(Storage(db), journal=False)
        store = LadderStore(db)
        store.configure_leagues(LEAGUES)
        ladder = Ladder(store, ServerMatches(runners), Policy(2, 2), runners=runners)
        ladder.play_bosses(Bosses(LEAGUES, runners))
        try:
            entrant = await ladder.lobby.enter("ada")
            with pytest.raises(NotFreeError, match="boss plays only on the ladder: 'wood-boss'"):
                ladder.lend(["ada", "wood-boss"])
            ladder.lend(["ada"]).end()  # nothing was taken
            entrant.close()
        finally:
            store.close()

    asyncio.run(go())
