"""Two match hosts on one PostgreSQL database run one ladder: real ``mammamia serve``
processes and real ``mammamia bot`` processes entered through both.

Checked: bots entered through different hosts play each other (their assignments
name the host that runs the match); every bot is in one match at a time across both
hosts; both hosts answer the same standings; every result is stored once and rated
once, in finish order (``ladder rerate`` agrees); a ``kill -9`` of one host in the
middle of its matches loses nothing: the other host goes on meanwhile, and the
killed one, started again with its host id, resumes its matches, which finish and
are rated once, and no result a bot was told of goes missing or counts twice; and
both hosts go on after a PostgreSQL restart."""

from __future__ import annotations

import itertools
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.db.connection import connect
from server.db.ladder.store import LadderStore
from tests.ports import restartable_port

from .postgres import PostgresServer, wait_accepting

MAMMAMIA = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "mammamia"
# Four through A, two through B, and B runs one two-player match at a time: while B is
# down, at most two of A's bots are seated in its cut-off match, so A has two to go on.
THROUGH_A = {
    "random-a": "random",
    "greedy-a": "greedy",
    "counter-a": "counter",
    "random2-a": "random",
}
THROUGH_B = {"greedy-b": "greedy", "counter-b": "counter"}
BOTS = {**THROUGH_A, **THROUGH_B}


def rated(address: str) -> int:
    """Returns the rated matches a host's Standings counts."""
    with grpc.insecure_channel(address) as channel:
        return int(
            pb_grpc.LadderStub(channel)
            .Standings(pb.StandingsRequest(), timeout=10)
            .matches_finished
        )


def standings(address: str) -> list[tuple[str, int, int, float]]:
    """Returns (name, games, wins, rating) per line of a host's standings."""
    with grpc.insecure_channel(address) as channel:
        reply = pb_grpc.LadderStub(channel).Standings(pb.StandingsRequest(), timeout=10)
    return [(s.name, s.games, s.wins, round(s.rating, 9)) for s in reply.standings]


def same_standings(a: str, b: str) -> bool:
    """Returns whether the hosts at ``a`` and ``b`` answer the same standings, read
    between two equal reads of ``a`` (the bots go on playing: a result rated between
    two reads changes them)."""
    first = standings(a)
    return first == standings(b) == standings(a)


def wait(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Returns the first truthy ``predicate()``; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except (grpc.RpcError, RuntimeError):
            value = None  # a host restarting, the database busy
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.2)


def rows(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Returns the rows of one query on the shared database."""
    db = connect(url)
    try:
        return [tuple(r) for r in db.execute(sql, params).fetchall()]
    finally:
        db.close()


def logged(log: Path) -> list[dict[str, Any]]:
    """Returns the JSON events a bot process logged."""
    events = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def told(bots: Path) -> dict[str, dict[str, Any]]:
    """Returns, per "bot/match", what the bot logged of the match's end: the results
    announced to the bots."""
    return {
        f"{log.stem}/{event['match']}": event
        for log in bots.glob("*.log")
        for event in logged(log)
        if event.get("event") == "match_ended"
    }


def host_flags(port: int, name: str) -> dict[str, Any]:
    """Returns the serve options of a host on a fixed port with a fixed host id (so
    that a restarted host finds its matches and its bots find it). A long lease: a host
    killed here comes back to its own matches (tests/storage/test_takeover.py has one
    that does not)."""
    return {
        "args": [
            *("--port", str(port), "--advertise", f"127.0.0.1:{port}"),
            *("--host-id", name, "--host-lease", "300"),
        ]
    }


def test_two_hosts_run_one_ladder_and_a_killed_host_loses_nothing(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., Any],
    postgres_url: str,
    tmp_path: Path,
) -> None:
    port_a, port_b = restartable_port(), restartable_port()
    # A match formed in the moment before B's kill may seat a bot whose Enter stream
    # was on B: it is played by default until that bot is back (after its start
    # timeout, a missed deadline a turn). Short ones keep that within the waits below.
    options = {
        "db": postgres_url,
        "ladder_players": "2",
        "drain_seconds": 5,
        "ladder_start_timeout": 3,
        "ladder_deadline_ms": 2000,
    }
    a = start_server(**options, ladder_concurrency=2, **host_flags(port_a, "host-a"))
    b = start_server(**options, ladder_concurrency=1, **host_flags(port_b, "host-b"))
    ladder_bots(a.address, THROUGH_A)
    ladder_bots(b.address, THROUGH_B)
    wait(lambda: rated(a.address) >= 8, 90, "8 rated matches")

    # Both hosts run matches, and bots entered through one host play on the other.
    by_host = dict(rows(postgres_url, "SELECT host, COUNT(*) FROM ladder_matches GROUP BY host"))
    assert by_host.get("host-a", 0) > 0 and by_host.get("host-b", 0) > 0, by_host
    crossed = rows(
        postgres_url,
        """
        SELECT COUNT(DISTINCT m.match_id) FROM ladder_matches m
        JOIN ladder_results r1 ON r1.match_id = m.match_id AND right(r1.name, 2) = '-a'
        JOIN ladder_results r2 ON r2.match_id = m.match_id AND right(r2.name, 2) = '-b'""",
    )
    assert crossed[0][0] > 0
    # (The SDK logs the host it plays an assignment on: B's address, from the
    # assignment, for a bot entered through A.)
    assert any(
        event.get("host") == f"127.0.0.1:{port_b}"
        for name in THROUGH_A
        for event in logged(tmp_path / "bots" / f"{name}.log")
        if event.get("event") == "ladder_assignment"
    )

    # A kill -9 of host B while it runs ladder matches.
    def b_running() -> list[str]:
        return [
            m
            for (m,) in rows(
                postgres_url,
                "SELECT match_id FROM ladder_matches WHERE status = 'running' AND host = 'host-b'",
            )
        ]

    for _attempt in range(5):
        wait(b_running, 30, "a ladder match running on host B")
        b.kill()
        cut = set(b_running())  # what the kill cut off
        if cut:
            break
        b.start()
    assert cut, "no kill -9 caught a ladder match running on host B"
    told_before = told(tmp_path / "bots")
    assert told_before
    # Host A goes on meanwhile, with the bots not seated on B.
    before = rated(a.address)
    wait(lambda: rated(a.address) >= before + 2, 60, "2 more rated matches while B is down")
    b.start()
    wait(
        lambda: (
            cut
            <= {
                m
                for (m,) in rows(
                    postgres_url, "SELECT match_id FROM ladder_matches WHERE status = 'finished'"
                )
            }
        ),
        60,
        "the matches the kill cut off to finish",
    )
    assert "ladder_match_resumed" in b.logs()
    after = rated(a.address)
    wait(lambda: rated(b.address) >= after + 2, 60, "2 more rated matches after B is back")

    # Both hosts answer the same standings (one database).
    wait(lambda: same_standings(a.address, b.address), 30, "the same standings on both")
    assert a.stop() == 0 and b.stop() == 0

    # Each bot was in one match at a time: its matches do not overlap in time.
    spans: dict[str, list[tuple[float, float]]] = {}
    for name, created, ended in rows(
        postgres_url,
        """
            SELECT r.name, m.created, m.ended FROM ladder_results r
            JOIN ladder_matches m ON m.match_id = r.match_id ORDER BY m.created""",
    ):
        spans.setdefault(name, []).append((created, ended))
    assert set(spans) == set(BOTS)
    for name, played in spans.items():
        for (_, ended), (created, _) in itertools.pairwise(played):
            assert ended is not None and created >= ended, (name, played)

    # Every ladder match the server finished has its result once, rated once, in
    # finish order; nothing is left running; nothing aborted is rated.
    server_finished = {
        m
        for (m,) in rows(
            postgres_url, "SELECT id FROM matches WHERE ladder = 1 AND status = 'finished'"
        )
    }
    ladder_finished = {
        m
        for (m,) in rows(
            postgres_url, "SELECT match_id FROM ladder_matches WHERE status = 'finished'"
        )
    }
    assert server_finished == ladder_finished
    assert cut <= ladder_finished
    assert (
        rows(
            postgres_url,
            "SELECT match_id, host, status, rated FROM ladder_matches"
            " WHERE status = 'running' OR (status = 'finished' AND rated = 0)"
            " OR (status = 'aborted' AND rated = 1)",
        )
        == []
    )
    orders = [
        o
        for (o,) in rows(
            postgres_url,
            "SELECT finish_order FROM ladder_matches"
            " WHERE status = 'finished' ORDER BY finish_order",
        )
    ]
    assert orders == list(range(1, len(orders) + 1))
    assert rows(postgres_url, "SELECT COUNT(*) FROM ladder_results WHERE token IS NOT NULL") == [
        (0,)
    ]
    # Every finished match has its seats' positions (round 1's playing order), and
    # the positions' tallies agree with a count afresh.
    assert rows(
        postgres_url,
        "SELECT COUNT(*) FROM ladder_results r JOIN ladder_matches m"
        " ON m.match_id = r.match_id WHERE m.status = 'finished'"
        " AND r.position IS NULL",
    ) == [(0,)]
    reads = LadderStore(postgres_url)
    try:
        assert reads.stored_positions() == reads.recount_positions() != {}
    finally:
        reads.close()

    # No result a bot was told of is lost or counted twice: each finished match a bot
    # logged is finished and rated with the ranks it was told, once per seat.
    for key, event in told_before.items():
        if event["status"] != "finished":
            continue
        name, match_id = key.split("/")
        assert match_id in ladder_finished, key
        ((seat, winner),) = rows(
            postgres_url,
            "SELECT seat, CASE WHEN rank = 1 THEN 1"
            " ELSE 0 END FROM ladder_results WHERE match_id = ?"
            " AND name = ?",
            match_id,
            name,
        )
        assert seat == event["seat"] and bool(winner) == (seat in event["winners"]), key
    games = dict(rows(postgres_url, "SELECT name, games FROM ladder_tallies WHERE players = 0"))
    seated = dict(
        rows(
            postgres_url,
            "SELECT r.name, COUNT(*) FROM ladder_results r"
            " JOIN ladder_matches m ON m.match_id = r.match_id"
            " WHERE m.status = 'finished' GROUP BY r.name",
        )
    )
    assert games == seated

    rerate = subprocess.run(
        [str(MAMMAMIA), "ladder", "rerate", "--db", postgres_url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rerate.returncode == 0, rerate.stdout + rerate.stderr


def test_an_entry_through_either_host_is_one_entry_and_its_seat_names_the_running_host(
    start_server: Callable[..., Any], postgres_url: str
) -> None:
    options = {
        "db": postgres_url,
        "ladder_concurrency": 1,
        "ladder_players": "2",
        "ladder_start_timeout": 30,
    }
    port_a, port_b = restartable_port(), restartable_port()
    a = start_server(**options, **host_flags(port_a, "host-a"))
    b = start_server(**options, **host_flags(port_b, "host-b"))
    with grpc.insecure_channel(a.address) as to_a, grpc.insecure_channel(b.address) as to_b:
        ladder_a, ladder_b = pb_grpc.LadderStub(to_a), pb_grpc.LadderStub(to_b)
        keys = {
            name: ladder_a.Register(pb.RegisterRequest(name=name), timeout=10).key
            for name in ("ada", "bob")
        }

        def enter(ladder: pb_grpc.LadderStub, name: str) -> Any:
            return ladder.Enter(
                pb.EnterRequest(name=name), timeout=60, metadata=(("bot-key", keys[name]),)
            )

        # One bot entered through A, then through B (a key registered on A works on
        # B): the newer entry plays, the older stream ends as replaced.
        first = enter(ladder_a, "ada")
        first.initial_metadata()
        again = enter(ladder_b, "ada")
        again.initial_metadata()
        # A refused second entry would leave the first stream waiting out its deadline:
        # it fails here, with its own status.
        assert not again.done(), (again.code(), again.details())
        try:
            next(first)
            raise AssertionError("the replaced stream sent an assignment")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.ALREADY_EXISTS, e
            assert "entered the ladder again" in (e.details() or "")

        # With a second bot entered through A, the two are matched across the hosts;
        # the bot whose stream is not on the running host is sent that host's address.
        other = enter(ladder_a, "bob")
        seat_ada, seat_bob = next(again), next(other)
        assert seat_ada.match_id == seat_bob.match_id
        (running,) = rows(
            postgres_url,
            "SELECT host, address FROM ladder_matches WHERE match_id = ?",
            seat_ada.match_id,
        )
        assert running in (("host-a", f"127.0.0.1:{port_a}"), ("host-b", f"127.0.0.1:{port_b}"))
        host: str = running[0]
        ada_here = host == "host-b"  # ada's stream is on B
        assert seat_ada.host_address == ("" if ada_here else running[1])
        assert seat_bob.host_address == ("" if running[0] == "host-a" else running[1])
        assert {seat_ada.seat, seat_bob.seat} == {0, 1}
        # Both are sent the match's commitment to its seed, before they join: the one
        # the running host published.
        (committed,) = rows(
            postgres_url,
            "SELECT commitment FROM ladder_matches WHERE match_id = ?",
            seat_ada.match_id,
        )
        assert len(committed[0]) == 64
        assert seat_ada.commitment == seat_bob.commitment == committed[0]
        assert not seat_ada.HasField("deal_set")

        # The bot enters again through the other host in the middle of its match: it
        # is sent the same seat, with the address as seen from there.
        again.cancel()
        back = enter(ladder_a, "ada")
        seat = next(back)
        assert (seat.match_id, seat.seat_token, seat.seat) == (
            seat_ada.match_id,
            seat_ada.seat_token,
            seat_ada.seat,
        )
        assert seat.host_address == ("" if running[0] == "host-a" else running[1])
        assert seat.commitment == committed[0]
        back.cancel()
        other.cancel()
    assert a.stop() == 0 and b.stop() == 0


def test_two_hosts_go_on_after_a_postgresql_restart(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., Any],
    postgres: PostgresServer,
    postgres_url: str,
) -> None:
    options = {
        "db": postgres_url,
        "ladder_concurrency": 2,
        "ladder_players": "2",
        "drain_seconds": 5,
    }
    a = start_server(**options, **host_flags(restartable_port(), "host-a"))
    b = start_server(**options, **host_flags(restartable_port(), "host-b"))
    ladder_bots(a.address, {"random-a": "random", "greedy-a": "greedy"})
    ladder_bots(b.address, {"random-b": "random", "greedy-b": "greedy"})
    wait(lambda: rated(a.address) >= 3, 60, "3 rated matches")

    def serving(address: str) -> bool:
        with grpc.insecure_channel(address) as channel:
            return bool(
                health_pb2_grpc.HealthStub(channel)  # type: ignore[attr-defined]
                .Check(health_pb2.HealthCheckRequest(), timeout=5)
                .status
                == health_pb2.HealthCheckResponse.SERVING
            )

    postgres.stop()
    try:
        # The matches' writes fail: the hosts say so.
        wait(
            lambda: not serving(a.address) or not serving(b.address),
            30,
            "a host NOT_SERVING while PostgreSQL is down",
        )
    finally:
        postgres.start()
        wait_accepting(postgres)
    before = rated(a.address)
    wait(lambda: rated(b.address) >= before + 3, 60, "3 more rated matches after the restart")
    wait(lambda: serving(a.address) and serving(b.address), 30, "both hosts SERVING again")
    wait(lambda: same_standings(a.address, b.address), 30, "the same standings on both")
    assert a.stop() == 0 and b.stop() == 0
    assert (
        rows(
            postgres_url,
            "SELECT match_id, host, status FROM ladder_matches"
            " WHERE status = 'running' OR (status = 'finished' AND rated = 0)",
        )
        == []
    )
    rerate = subprocess.run(
        [str(MAMMAMIA), "ladder", "rerate", "--db", postgres_url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rerate.returncode == 0, rerate.stdout + rerate.stderr


def test_duplicate_sets_keep_a_ladder_of_one_host(
    start_server: Callable[..., Any], postgres_url: str, tmp_path: Path
) -> None:
    """Duplicate sets are not scheduled across hosts: a host with --ladder-duplicate
    takes the database's ladder alone, and a host that shares it is refused (and the
    other way round), each with one line and status 2."""

    def serve(*flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                str(MAMMAMIA),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--db",
                postgres_url,
                "--organiser-key",
                "k",
                *flags,
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )

    shared = start_server(db=postgres_url, **host_flags(restartable_port(), "host-a"))
    alone = serve("--host-id", "host-d", "--ladder-duplicate")
    assert alone.returncode == 2, alone.stderr
    assert "--ladder-duplicate needs a ladder of one host" in alone.stderr
    assert shared.stop() == 0

    duplicate = start_server(
        db=postgres_url, ladder_duplicate=True, **host_flags(restartable_port(), "host-d")
    )
    other = serve("--host-id", "host-b")
    assert other.returncode == 2, other.stderr
    assert "runs this database's ladder alone" in other.stderr
    assert duplicate.stop() == 0
