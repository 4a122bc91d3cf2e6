"""Everything can leave: a real server over a ladder of more than 500 matches pages
every list to its end (each item once, while matches finish), refuses a bad page
token, and ``mammamia ladder export`` writes every result and record, from the
database and from the server alike."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest

from bench.ladder_reads import fill
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.db.ladder.rows import SeatResult
from server.db.ladder.store import LadderStore
from server.ladder.export import RESULT_COLUMNS
from server.paging import token_of

from .conftest import MAMMAMIA, query

if TYPE_CHECKING:
    from tests.conftest import RunningServer

FILLED = 600  # finished, rated matches with records (bench's fill)
ABORTED = 3  # and aborted ones, through the store's own writes


def _ladder(path: Path | str) -> None:
    """Fills the database at ``path``: FILLED finished matches, then ABORTED aborted
    and two more finished matches written as the server writes them, the last one
    voided by an operator."""
    fill(path, matches=FILLED, bots=12)
    store = LadderStore(path)
    try:
        for i in range(ABORTED):
            store.start_match(f"cut-{i}", ["bot-000", "bot-001"])
            assert store.abort_match(f"cut-{i}")
        for i in range(2):
            _finish(store, f"late-{i}", ["bot-002", "bot-003", "bot-004"])
        assert store.void_match("late-1", "a server fault", "alice", time.time())
    finally:
        store.close()


def _finish(store: LadderStore, match_id: str, names: list[str]) -> None:
    store.start_match(match_id, names)
    ranks = range(1, len(names) + 1)
    seats = [SeatResult(rank, 3, position) for position, rank in enumerate(ranks, start=1)]
    assert store.finish_match(match_id, seats)


@pytest.fixture
def ladder_server(tmp_path: Path, start_server: Callable[..., RunningServer]) -> RunningServer:
    directory = tmp_path / "server"
    directory.mkdir()
    _ladder(directory / "arena.db")
    # The lists are read as fast as a client can: no public rate to wait for.
    return start_server(directory, public_rate="")


def _export(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MAMMAMIA), "ladder", "export", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _read_export(out: Path) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    with open(out / "results.csv", newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == RESULT_COLUMNS
        rows = list(reader)
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    return rows, records


def test_export_writes_every_match_from_the_database_and_from_the_server(
    ladder_server: RunningServer, tmp_path: Path
) -> None:
    db = ladder_server.db_path
    from_db = _export("--db", str(db), "--every", "200", str(tmp_path / "from-db"))
    assert from_db.returncode == 0, from_db.stderr
    rows, records = _read_export(tmp_path / "from-db")

    # Every seat of every ended match, compared with the database itself.
    seats = query(
        db,
        "SELECT r.match_id, r.seat, r.name, COALESCE(r.rank, 0) FROM ladder_results r"
        " JOIN ladder_matches m ON m.match_id = r.match_id"
        " WHERE m.status IN ('finished', 'aborted')",
    )
    assert len(seats) > FILLED * 2
    assert sorted(
        (r["match_id"], int(r["seat"]), r["name"], int(r["rank"] or 0)) for r in rows
    ) == (sorted(seats))
    statuses = Counter(r["status"] for r in rows if r["seat"] == "0")
    assert statuses == {"finished": FILLED + 2, "aborted": ABORTED}
    assert {r["finish_order"] for r in rows if r["status"] == "aborted"} == {""}
    voided = {(r["match_id"], r["void_reason"], r["rated"]) for r in rows if r["voided"] == "1"}
    assert voided == {("late-1", "a server fault", "0")}
    # Newest first, as every ladder list.
    created = [r["created"] for r in rows]
    assert created == sorted(created, reverse=True)
    # A record for each match that stored one (bench's fill stores one per match).
    assert len(records) == FILLED
    assert {r["match"] for r in records} == {
        m for (m,) in query(db, "SELECT id FROM matches WHERE record IS NOT NULL")
    }
    progress = from_db.stderr.strip().splitlines()
    assert progress[0] == "mammamia ladder export: 200 matches (" + progress[0].split("(")[1]
    assert (
        f"wrote {FILLED + 2 + ABORTED} matches ({len(seats)} seats), {FILLED} records"
        in (progress[-1])
    )

    # The server pages its Results and records to the very same files.
    from_server = _export(
        "--server",
        ladder_server.address,
        "--organiser-key",
        ladder_server.organiser_key,
        "--page-size",
        "97",
        str(tmp_path / "from-server"),
    )
    assert from_server.returncode == 0, from_server.stderr
    for name in ("results.csv", "records.jsonl"):
        assert (tmp_path / "from-server" / name).read_bytes() == (
            tmp_path / "from-db" / name
        ).read_bytes(), name

    # An existing OUT is never overwritten.
    again = _export("--db", str(db), str(tmp_path / "from-db"))
    assert again.returncode == 2 and "exists" in again.stderr


def test_an_interrupted_export_leaves_no_file_under_its_name(
    ladder_server: RunningServer, tmp_path: Path
) -> None:
    out = tmp_path / "cut"
    export = subprocess.Popen(
        [
            str(MAMMAMIA),
            "ladder",
            "export",
            "--server",
            ladder_server.address,
            "--page-size",
            "5",
            "--every",
            "5",
            str(out),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert export.stderr is not None
        line = export.stderr.readline()  # the first progress line: it is writing
        assert "mammamia ladder export: 5 matches" in line
        export.send_signal(signal.SIGINT)
        export.wait(timeout=30)
        assert "interrupted; nothing written" in export.stderr.read()
    finally:
        if export.poll() is None:
            export.kill()
            export.wait()
        if export.stderr is not None:
            export.stderr.close()
    assert export.returncode == 130
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [tmp_path / "server"]  # no partial left either


def _pages(
    call: Callable[[str], tuple[list[str], str]],
    between: Callable[[], None] = lambda: None,
) -> list[str]:
    items, token, pages = [], "", 0
    while True:
        page, token = call(token)
        items += page
        pages += 1
        if not token:
            return items
        between()
        assert pages < 1000


def test_every_list_pages_to_its_end_each_item_once_while_matches_finish(
    ladder_server: RunningServer,
) -> None:
    db = ladder_server.db_path
    finished_before = {
        m for (m,) in query(db, "SELECT match_id FROM ladder_matches WHERE status = 'finished'")
    }
    store = LadderStore(db)
    late: list[str] = []

    def finish_one() -> None:
        late.append(f"meanwhile-{len(late)}")
        _finish(store, late[-1], ["bot-005", "bot-006"])

    metadata = (("organiser-key", ladder_server.organiser_key),)
    try:
        with grpc.insecure_channel(ladder_server.address) as channel:
            ladder = pb_grpc.LadderStub(channel)
            organiser = pb_grpc.OrganiserStub(channel)

            def matches(token: str) -> tuple[list[str], str]:
                r = ladder.Matches(pb.MatchesRequest(page_size=50, page_token=token), timeout=10)
                assert len(r.matches) <= 50
                return [m.match_id for m in r.matches], r.next_page_token

            seen = _pages(matches, finish_one)
            assert len(seen) == len(set(seen)), "a match came twice"
            assert finished_before <= set(seen), "a match was missed"
            assert len(finished_before) > 500 and len(late) >= 10

            # An old client (no page fields) gets the first page of the default size,
            # and the token of the next; `limit` still sizes it.
            first = ladder.Matches(pb.MatchesRequest(), timeout=10)
            assert len(first.matches) == 20 and first.next_page_token
            assert len(ladder.Matches(pb.MatchesRequest(limit=600), timeout=10).matches) == 600

            # One bot's matches, through the results' own index.
            def of_bot(token: str) -> tuple[list[str], str]:
                r = ladder.Matches(
                    pb.MatchesRequest(name="bot-000", page_size=7, page_token=token), timeout=10
                )
                return [m.match_id for m in r.matches], r.next_page_token

            expected = query(
                db,
                "SELECT COUNT(*) FROM ladder_results r JOIN ladder_matches m"
                " ON m.match_id = r.match_id WHERE r.name = 'bot-000' AND m.status = 'finished'",
            )[0][0]
            mine = _pages(of_bot)
            assert len(mine) == len(set(mine)) == expected

            def results(token: str) -> tuple[list[str], str]:
                r = ladder.Results(pb.ResultsRequest(page_size=64, page_token=token), timeout=10)
                return [m.match_id for m in r.matches], r.next_page_token

            everything = _pages(results, finish_one)
            assert len(everything) == len(set(everything))
            assert finished_before <= set(everything)

            def organised(token: str) -> tuple[list[str], str]:
                r = organiser.ListMatches(
                    pb.ListMatchesRequest(page_size=128, page_token=token),
                    metadata=metadata,
                    timeout=10,
                )
                return [m.match_id for m in r.matches], r.next_page_token

            listed = _pages(organised)
            assert len(listed) == len(set(listed)) == FILLED

            def standings(token: str) -> tuple[list[str], str]:
                r = ladder.Standings(pb.StandingsRequest(page_size=5, page_token=token), timeout=10)
                return [s.name for s in r.standings], r.next_page_token

            table = ladder.Standings(pb.StandingsRequest(), timeout=10)
            assert not table.next_page_token  # one page holds them all by default
            assert _pages(standings) == [s.name for s in table.standings]
    finally:
        store.close()


@pytest.mark.parametrize("call", ["Matches", "Results", "Standings", "ListMatches"])
def test_a_bad_page_token_is_refused_naming_it(ladder_server: RunningServer, call: str) -> None:
    forged = token_of("ladder.matches", (time.time(), "m"), scope="somebody else")
    with grpc.insecure_channel(ladder_server.address) as channel:
        ladder = pb_grpc.LadderStub(channel)
        organiser = pb_grpc.OrganiserStub(channel)
        metadata = (("organiser-key", ladder_server.organiser_key),)
        calls: dict[str, Callable[[str], object]] = {
            "Matches": lambda t: ladder.Matches(pb.MatchesRequest(page_token=t), timeout=10),
            "Results": lambda t: ladder.Results(pb.ResultsRequest(page_token=t), timeout=10),
            "Standings": lambda t: ladder.Standings(
                pb.StandingsRequest(page_size=2, page_token=t), timeout=10
            ),
            "ListMatches": lambda t: organiser.ListMatches(
                pb.ListMatchesRequest(page_token=t), metadata=metadata, timeout=10
            ),
        }
        for token in ("garbage!", forged, "A" * 5000):
            with pytest.raises(grpc.RpcError) as refused:
                calls[call](token)
            e = refused.value
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
            assert "page_token " + repr(token[:80]) in (e.details() or "")


def test_the_list_commands_follow_the_pages(ladder_server: RunningServer) -> None:
    def lines(*args: str) -> list[dict[str, Any]]:
        run = subprocess.run([str(MAMMAMIA), *args], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        return [json.loads(line) for line in run.stdout.splitlines()]

    address = ladder_server.address
    every = lines("ladder", "matches", "--server", address, "--limit", "0")
    assert len(every) == len({m["match"] for m in every}) == FILLED + 2
    assert len(lines("ladder", "matches", "--server", address, "--limit", "510")) == 510
    key = ladder_server.organiser_key
    listed = lines("match", "list", "--server", address, "--organiser-key", key, "--limit", "0")
    assert len(listed) == FILLED
    assert len(lines("match", "list", "--server", address, "--organiser-key", key)) == 50


def test_the_reads_page_and_export_alike_on_sqlite_and_postgresql(
    database: str, tmp_path: Path
) -> None:
    from server.db.ladder.results import open_read_only
    from server.db.matches import Storage
    from server.status import MatchStatus

    _ladder(database)
    store = LadderStore(database)
    storage = Storage(database)
    reader = open_read_only(database)
    try:

        def finished(token: str) -> tuple[list[str], str]:
            page = store.matches_page(None, 45, token, MatchStatus.FINISHED)
            return [m.match_id for m in page.items], page.next_token

        def mine(token: str) -> tuple[list[str], str]:
            page = store.matches_page("bot-003", 6, token)
            return [m.match_id for m in page.items], page.next_token

        def results(token: str) -> tuple[list[str], str]:
            page = reader.page(77, token)
            return [m.match_id for m in page.items], page.next_token

        def organised(token: str) -> tuple[list[str], str]:
            page = storage.matches_page(64, token)
            return [m.id for m in page.items], page.next_token

        listed = _pages(finished)
        assert len(listed) == len(set(listed)) == FILLED + 2
        assert listed == [m.match_id for m in store.matches(None, 10_000, MatchStatus.FINISHED)]
        assert _pages(mine) == [m.match_id for m in store.matches("bot-003", 10_000)]
        ended = _pages(results)
        assert len(ended) == len(set(ended)) == FILLED + 2 + ABORTED
        assert len(set(_pages(organised))) == FILLED
    finally:
        reader.close()
        storage.close()
        store.close()

    export = _export("--db", database, "--every", "1000", str(tmp_path / "out"))
    assert export.returncode == 0, export.stderr
    rows, records = _read_export(tmp_path / "out")
    assert len({r["match_id"] for r in rows}) == FILLED + 2 + ABORTED
    assert len(records) == FILLED
    assert "wrote 605 matches" in export.stderr


def test_standings_longer_than_a_page_are_read_whole_by_the_command(
    tmp_path: Path, start_server: Callable[..., RunningServer]
) -> None:
    directory = tmp_path / "server"
    directory.mkdir()
    fill(directory / "arena.db", matches=900, bots=1200)
    rated = query(directory / "arena.db", "SELECT COUNT(*) FROM ladder_ratings WHERE players = 0")
    assert rated[0][0] > 1000
    server = start_server(directory)
    with grpc.insecure_channel(server.address) as channel:
        first = pb_grpc.LadderStub(channel).Standings(pb.StandingsRequest(), timeout=10)
    assert len(first.standings) == 1000 and first.next_page_token

    run = subprocess.run(
        [str(MAMMAMIA), "ladder", "standings", "--server", server.address, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    # With which version each line shows, and the leagues (none here) and their moves.
    assert set(data) == {"matches_finished", "by", "standings", "leagues", "moves"}
    assert data["leagues"] == [] and data["moves"] == []
    assert [s["rank"] for s in data["standings"]] == list(range(1, rated[0][0] + 1))
    assert data["matches_finished"] == first.matches_finished


def test_two_hosts_on_postgresql_continue_each_others_pages(
    postgres_url: str, start_server: Callable[..., RunningServer], tmp_path: Path
) -> None:
    _ladder(postgres_url)
    hosts = [
        start_server(db=postgres_url, public_rate="", args=["--host-id", name])
        for name in ("host-a", "host-b")
    ]
    with (
        grpc.insecure_channel(hosts[0].address) as a,
        grpc.insecure_channel(hosts[1].address) as b,
    ):
        stubs = [pb_grpc.LadderStub(a), pb_grpc.LadderStub(b)]
        turn = iter(range(10_000))

        def matches(token: str) -> tuple[list[str], str]:
            stub = stubs[next(turn) % 2]  # each page from the other host
            r = stub.Matches(pb.MatchesRequest(page_size=40, page_token=token), timeout=10)
            return [m.match_id for m in r.matches], r.next_page_token

        def results(token: str) -> tuple[list[str], str]:
            stub = stubs[next(turn) % 2]
            r = stub.Results(pb.ResultsRequest(page_size=90, page_token=token), timeout=10)
            return [m.match_id for m in r.matches], r.next_page_token

        listed = _pages(matches)
        assert len(listed) == len(set(listed)) == FILLED + 2
        ended = _pages(results)
        assert len(ended) == len(set(ended)) == FILLED + 2 + ABORTED

    through_b = _export(
        "--server",
        hosts[1].address,
        "--organiser-key",
        hosts[1].organiser_key,
        str(tmp_path / "b"),
    )
    assert through_b.returncode == 0, through_b.stderr
    direct = _export("--db", postgres_url, str(tmp_path / "db"))
    assert direct.returncode == 0, direct.stderr
    for name in ("results.csv", "records.jsonl"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "db" / name).read_bytes()
