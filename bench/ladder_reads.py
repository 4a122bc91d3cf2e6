"""Ladder reads with a long history: standings, scheduling and match lists over 50,000
stored ladder matches, and what Standings calls do to a match being played.

The database is filled in bulk through the store's own schema (the migrations make
the file, rows go in with one ``executemany`` per table in one transaction): 50,000
finished, rated ladder matches of 2 to 5 of ``bots`` bots, their results, their rows
in the server's ``matches`` table, and ratings and tallies that agree with the
results (ratings drawn at random: the reads cost the same whatever they hold).

In-process, on that file (ms, p50 and p99 over ``repetitions``):

- ``standings``: one Standings read (all matches), as the server's reader runs it;
- ``scheduling_pass``: what the scheduler does when bots wait: describe every bot
  (rating and games, ``Ladder._waiting``) and form the matches (``form_matches``);
- ``matches``: a bot's 20 latest finished matches (Ladder.Matches' default);
- ``recount``: for scale, one count of every bot's games, wins and pizzas over the
  whole history (what the standings cost before the tallies, and still what
  ``mammamia ladder rerate`` does).

Then a ``mammamia serve`` on that file plays one reference match after another
(``bench.crowd``, 4 seats answering at once) and the figure is its decision latency
as a client sees it (p50, p99), first alone and then while this process calls
Ladder.Standings ``rate`` times a second, whose round trips are timed too.

``python -m bench.ladder_reads`` prints a table; ``run()`` returns the figures.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, Final

import grpc
from grpc_health.v1 import health_pb2

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .latency import summary
from .load import _read
from .serve import HEALTH_CHECK, Server, python_module, stop

MATCHES: Final = 50_000
BOTS: Final = 40
TARGET_MS: Final = 5.0


def fill(
    path: Path | str, matches: int = MATCHES, bots: int = BOTS, seed: int = 0
) -> dict[str, Any]:
    """Fills a new database (a file, or an empty PostgreSQL database's URL) with
    ``matches`` finished, rated ladder matches of ``bots`` bots; returns how many rows
    and how long it took."""
    from server.db.connection import connect, is_url, transaction
    from server.db.ladder.rows import hash_key
    from server.db.ladder.store import LadderStore

    started = time.perf_counter()
    LadderStore(path).close()  # the schema, by the migrations
    rng = random.Random(seed)
    names = [f"bot-{i:03}" for i in range(bots)]
    t0 = time.time() - matches * 0.1
    ladder_rows, results, server_rows = [], [], []
    tallies: dict[tuple[int, str], list[int]] = {}
    totals: dict[int, int] = {}
    for i in range(matches):
        players = rng.randint(2, 5)
        seated = rng.sample(names, players)
        ranks = [rng.randint(1, players) for _ in seated]
        best = min(ranks)
        ranks = [1 if k == best else k for k in ranks]
        delivered = [rng.randint(0, 9) for _ in seated]
        match_id = f"m-{i:08x}"
        created = t0 + i * 0.1
        ladder_rows.append((match_id, players, created, created + 60, i + 1))
        results += [
            (match_id, s, n, k, d, created)
            for s, (n, k, d) in enumerate(zip(seated, ranks, delivered, strict=True))
        ]
        iso = time.strftime("%Y-%m-%dT%H:%M:%S.000+00:00", time.gmtime(created))
        server_rows.append(
            (
                match_id,
                players,
                json.dumps(seated),
                iso,
                iso,
                json.dumps([s for s, k in enumerate(ranks) if k == 1]),
                json.dumps(ranks),
                json.dumps(delivered),
                json.dumps({"match": match_id, "stand_in": True}),
            )
        )
        for scope in (0, players):
            totals[scope] = totals.get(scope, 0) + 1
            for n, k, d in zip(seated, ranks, delivered, strict=True):
                t = tallies.setdefault((scope, n), [0, 0, 0])
                t[0], t[1], t[2] = t[0] + 1, t[1] + (k == 1), t[2] + d
    ratings = [(scope, n, rng.uniform(15, 35), rng.uniform(0.8, 3.0)) for scope, n in tallies]
    with closing(connect(path)) as db, transaction(db):
        db.executemany(
            "INSERT INTO ladder_bots (name, key_hash, created, entered) VALUES (?, ?, ?, ?)",
            [(n, hash_key(n), t0, t0) for n in names],
        )
        db.executemany(
            "INSERT INTO ladder_matches (match_id, players, status, created, ended,"
            " finish_order, rated) VALUES (?, ?, 'finished', ?, ?, ?, 1)",
            ladder_rows,
        )
        db.executemany(
            "INSERT INTO ladder_results (match_id, seat, name, rank, delivered,"
            " created) VALUES (?, ?, ?, ?, ?, ?)",
            results,
        )
        db.executemany(
            "INSERT INTO matches (id, status, players, names, ladder, created,"
            " ended, winners, ranks, delivered, record)"
            " VALUES (?, 'finished', ?, ?, 1, ?, ?, ?, ?, ?, ?)",
            server_rows,
        )
        db.executemany(
            "INSERT INTO ladder_ratings (players, name, mu, sigma) VALUES (?, ?, ?, ?)", ratings
        )
        db.executemany(
            "INSERT INTO ladder_tallies (players, name, games, wins, delivered)"
            " VALUES (?, ?, ?, ?, ?)",
            [(scope, n, *t) for (scope, n), t in tallies.items()],
        )
        db.executemany(
            "INSERT INTO ladder_totals (players, matches) VALUES (?, ?)", list(totals.items())
        )
    if is_url(path):
        with closing(connect(path)) as db:
            db.execute("ANALYZE")  # the planner's statistics, as autovacuum's
            (size,) = db.execute("SELECT pg_database_size(current_database())").fetchone()
    else:
        size = Path(path).stat().st_size
    return {
        "matches": matches,
        "bots": bots,
        "results": len(results),
        "seconds": round(time.perf_counter() - started, 2),
        "megabytes": round(size / 2**20, 1),
    }


def _timed(call: Callable[[], object], repetitions: int) -> dict[str, float]:
    call()  # warm: the pages in the cache, as a server's
    samples = []
    for _ in range(repetitions):
        start = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - start)
    fig = summary(samples, 1e6, 3)
    return {"p50_ms": fig["p50"], "p99_ms": fig["p99"], "n": fig["n"]}


def reads(path: Path | str, repetitions: int = 200) -> dict[str, Any]:
    """Returns the in-process times of the reads on the filled file at ``path``."""
    from server.db.ladder.store import LadderStore
    from server.db.writer import Writer
    from server.ladder.lobby import LocalLobby
    from server.ladder.scheduler import Policy, form_matches
    from server.status import MatchStatus

    store = LadderStore(path)
    try:
        policy = Policy(concurrency=8)
        writer = Writer("ladder-writer")
        lobby = LocalLobby(store, writer, policy)
        names = sorted(store.ratings())
        rng = random.Random(1)

        def scheduling_pass() -> None:
            form_matches(lobby._waiting(names), policy, 0, rng)

        figures = {
            "standings": _timed(store.standings, repetitions),
            "scheduling_pass": _timed(scheduling_pass, repetitions),
            "matches": _timed(
                lambda: store.matches(names[0], 20, MatchStatus.FINISHED), repetitions
            ),
            "recount": _timed(store.recount, max(3, repetitions // 50)),
            "waiting_bots": len(names),
        }
        writer.close()
    finally:
        store.close()
    return figures


def _decisions(
    server: Server, directory: Path, tag: str, seconds: float, warmup: float
) -> dict[str, Any]:
    """Returns the decision latency of one reference match after another (4 seats, one
    crowd process) over ``seconds`` after ``warmup``."""
    start_at = time.time() + warmup
    out = directory / f"crowd-{tag}.json"
    with open(directory / f"crowd-{tag}.log", "wb") as log:
        crowd = python_module(
            "bench.crowd",
            "--server",
            server.address,
            "--organiser-key",
            server.organiser_key,
            "--matches",
            "1",
            "--players",
            "4",
            "--start-at",
            str(start_at),
            "--stop-at",
            str(start_at + seconds),
            "--out",
            str(out),
            log=log,
        )
        try:
            crowd.wait(warmup + seconds + 60)
        finally:
            stop(crowd, 5)
    part = _read(out, log.name)
    fig = (
        summary(part["latencies_us"], 1000, 3)
        if part["latencies_us"]
        else {"n": 0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    )
    return {
        "decisions": part["decisions"],
        "p50_ms": fig["p50"],
        "p99_ms": fig["p99"],
        "max_ms": fig["max"],
        "errors": part["errors"],
    }


class StandingsCaller:
    """Calls Ladder.Standings ``rate`` times a second on a thread, timing each call."""

    def __init__(self, address: str, rate: float) -> None:
        self.address, self.every = address, 1.0 / rate
        self.samples: list[int] = []
        self.health: list[int] = []  # a call that reads nothing, for comparison
        self.errors: list[str] = []
        self.last_size = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="standings-caller")

    def __enter__(self) -> StandingsCaller:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with grpc.insecure_channel(self.address) as channel:
            stub = pb_grpc.LadderStub(channel)
            check = channel.unary_unary(
                HEALTH_CHECK,
                request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                response_deserializer=health_pb2.HealthCheckResponse.FromString,
            )
            next_at = time.monotonic()
            ticks = 0
            while not self._stop.is_set():
                start = time.perf_counter_ns()
                try:
                    reply = stub.Standings(pb.StandingsRequest(), timeout=10)
                    self.samples.append(time.perf_counter_ns() - start)
                    self.last_size = reply.matches_finished
                    if ticks % 4 == 0:  # the round trip of any call, meanwhile
                        start = time.perf_counter_ns()
                        check(health_pb2.HealthCheckRequest(), timeout=10)
                        self.health.append(time.perf_counter_ns() - start)
                except grpc.RpcError as e:
                    self.errors.append(f"{e.code().name}: {e.details()}")
                ticks += 1
                next_at += self.every
                self._stop.wait(max(0.0, next_at - time.monotonic()))


def served(
    directory: Path, seconds: float, warmup: float, rate: float, db: str | None = None
) -> dict[str, Any]:
    """Returns a reference match's decision latency on a server over the filled
    database in ``directory`` (or at ``db``), alone and under Standings calls, and
    those calls' times."""
    with Server(directory, *(("--db", db) if db else ())) as server:
        alone = _decisions(server, directory, "alone", seconds, warmup)
        with StandingsCaller(server.address, rate) as caller:
            loaded = _decisions(server, directory, "standings", seconds, warmup)
    none = {"n": 0, "p50": 0.0, "p99": 0.0}
    calls = summary(caller.samples, 1e6, 3) if caller.samples else none
    health = summary(caller.health, 1e6, 3) if caller.health else none
    return {
        "alone": alone,
        "under_standings": loaded,
        "standings_rate": rate,
        "standings_calls": calls["n"],
        "standings_call_p50_ms": calls["p50"],
        "standings_call_p99_ms": calls["p99"],
        "health_call_p50_ms": health["p50"],
        "health_call_p99_ms": health["p99"],
        "standings_errors": len(caller.errors),
        "matches_finished_seen": caller.last_size,
    }


def run(
    matches: int = MATCHES,
    bots: int = BOTS,
    repetitions: int = 200,
    seconds: float = 10.0,
    warmup: float = 2.0,
    rate: float = 20.0,
    db: str | None = None,
) -> dict[str, Any]:
    """Returns the figures: the fill, the in-process reads, and the served match.
    ``db`` is an empty PostgreSQL database's URL to fill; None: a new SQLite file."""
    with tempfile.TemporaryDirectory(prefix="bench-ladder-reads-") as tmp:
        directory = Path(tmp)
        path: Path | str = db or directory / "bench.db"  # bench.serve.Server's file
        filled = fill(path, matches, bots)
        timed = reads(path, repetitions)
        match = served(directory, seconds, warmup, rate, db)
    return {
        "stored_matches": matches,
        "standings_p99_ms": timed["standings"]["p99_ms"],
        "scheduling_pass_p99_ms": timed["scheduling_pass"]["p99_ms"],
        "decision_p99_ms_under_standings": match["under_standings"]["p99_ms"],
        "target_ms": TARGET_MS,
        "fill": filled,
        "reads": timed,
        "served": match,
    }


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures of ``run`` as the lines of a text table."""
    fill_, timed, match = result["fill"], result["reads"], result["served"]
    alone, loaded = match["alone"], match["under_standings"]

    def line(what: str, fig: dict[str, float]) -> str:
        return f"  {what:<34}p50 {fig['p50_ms']:8.3f} ms   p99 {fig['p99_ms']:8.3f} ms"

    return [
        f"{fill_['matches']} stored ladder matches of {fill_['bots']} bots "
        f"({fill_['results']} results, {fill_['megabytes']} MB), filled in "
        f"{fill_['seconds']} s; target under {result['target_ms']:g} ms",
        line("standings (all matches)", timed["standings"]),
        line(f"scheduling pass ({timed['waiting_bots']} waiting)", timed["scheduling_pass"]),
        line("a bot's 20 latest matches", timed["matches"]),
        line("recount of the whole history", timed["recount"]),
        f"  reference match alone:            p50 {alone['p50_ms']:8.3f} ms   p99 "
        f"{alone['p99_ms']:8.3f} ms ({alone['decisions']} decisions, {alone['errors']} errors)",
        f"  ... under {match['standings_rate']:g} Standings/s:      p50 {loaded['p50_ms']:8.3f}"
        f" ms   p99 {loaded['p99_ms']:8.3f} ms ({loaded['decisions']} decisions, "
        f"{loaded['errors']} errors)",
        f"  Standings call round trip:        p50 {match['standings_call_p50_ms']:8.3f} ms   "
        f"p99 {match['standings_call_p99_ms']:8.3f} ms ({match['standings_calls']} calls, "
        f"{match['standings_errors']} errors)",
        f"  Health check round trip meanwhile: p50 {match['health_call_p50_ms']:8.3f} ms   "
        f"p99 {match['health_call_p99_ms']:8.3f} ms",
    ]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark from the command line; returns its figures."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.ladder_reads",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--matches", type=int, default=MATCHES)
    parser.add_argument("--bots", type=int, default=BOTS)
    parser.add_argument("--repetitions", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=20.0, help="Standings calls a second")
    parser.add_argument(
        "--db",
        metavar="URL",
        help="an empty PostgreSQL database's "
        "postgresql:// URL to fill and serve (default: a new SQLite file)",
    )
    args = parser.parse_args(argv)
    result = run(
        args.matches, args.bots, args.repetitions, args.seconds, rate=args.rate, db=args.db
    )
    print("\n".join(table(result)))
    return result


if __name__ == "__main__":
    main()
