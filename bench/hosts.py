"""Hosts: one and two ``mammamia serve`` hosts on one PostgreSQL database.

Two figures per host count, each from a fresh database made on the PostgreSQL server
given (``--postgres URL``, a database there that may create others), every host
pinned to a core of its own with ``taskset`` where there is one (host *i* to core
*i* modulo the cores):

- **the ladder**: random bots, each its own ``mammamia bot random --ladder`` process,
  entered through the hosts in turn; after the first rated match and a warm-up, the
  rated matches per minute over a window (one ladder: Standings of any host), and
  the decisions per second they took (the actions in the records of the matches
  finished in the window);
- **load**: a ``bench.crowd`` process per host holding ``matches`` four-player matches
  there, answering at once (a closed loop, as ``bench.load``), decisions per second
  summed over the hosts, and each host's CPU per decision (its journal writes to
  PostgreSQL included).

``python -m bench.hosts --postgres postgresql://USER@HOST:PORT/postgres`` prints a
table; ``run()`` returns the figures. Not part of ``python -m bench``: it needs a
PostgreSQL server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Final

import grpc
import psutil

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .serve import Server, mammamia, python_module, stop

FIRST_MATCH_TIMEOUT: Final = 60.0
CROWD_GRACE: Final = 60.0


@contextlib.contextmanager
def fresh_database(postgres: str | None, name: str) -> Iterator[str]:
    """Yields the URL of a new, empty database ``name`` on the server of ``postgres``
    (dropped afterwards), or with ``postgres`` None the path of a new SQLite file."""
    import psycopg

    if postgres is None:
        with tempfile.TemporaryDirectory(prefix="bench-hosts-db-") as tmp:
            yield str(Path(tmp) / f"{name}.db")
        return
    with psycopg.connect(postgres, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield postgres.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(postgres, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pinned(i: int) -> list[str]:
    """Returns the command prefix that pins host ``i`` to a core ([] without taskset)."""
    if shutil.which("taskset") is None:
        return []
    return ["taskset", "-c", str(i % (os.cpu_count() or 1))]


@contextlib.contextmanager
def hosts(directory: Path, url: str, count: int, *extra: str) -> Iterator[list[Server]]:
    """Yields ``count`` started hosts on the database ``url``, each pinned."""
    with contextlib.ExitStack() as stack:
        started = []
        for i in range(count):
            home = directory / f"host{i}"
            home.mkdir()
            started.append(
                stack.enter_context(
                    Server(home, "--db", url, "--host-id", f"host-{i}", *extra, prefix=pinned(i))
                )
            )
        yield started


def _rated(address: str) -> int:
    with grpc.insecure_channel(address) as channel:
        return int(
            pb_grpc.LadderStub(channel)
            .Standings(pb.StandingsRequest(), timeout=10)
            .matches_finished
        )


def _finished(url: str) -> dict[str, int]:
    """Returns the finished ladder matches and the actions in each one's record."""
    from server.db.connection import connect

    db = connect(url)
    try:
        rows = db.execute(
            "SELECT id, record FROM matches WHERE ladder = 1 AND status = 'finished'"
        ).fetchall()
    finally:
        db.close()
    return {match_id: len(json.loads(record).get("actions", [])) for match_id, record in rows}


def ladder(
    postgres: str,
    count: int,
    *,
    bots: int = 8,
    seconds: float = 30.0,
    warmup: float = 5.0,
    concurrency: int = 4,
    players: str = "2-4",
) -> dict[str, Any]:
    """Returns the ladder's rated matches per minute and decisions per second with
    ``count`` hosts and ``bots`` random bots entered through them in turn."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-hosts-") as tmp,
        fresh_database(postgres, f"bench_hosts_ladder_{count}") as url,
    ):
        directory = Path(tmp)
        with hosts(
            directory,
            url,
            count,
            "--ladder-concurrency",
            str(concurrency),
            "--ladder-players",
            players,
        ) as servers:
            entrants: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
            try:
                for i in range(bots):
                    name = f"random-{i + 1}"
                    log: IO[bytes] = open(directory / f"{name}.log", "wb")  # noqa: SIM115 (closed below)
                    entrants.append(
                        (
                            subprocess.Popen(
                                [
                                    *mammamia(),
                                    "bot",
                                    "random",
                                    "--ladder",
                                    "--name",
                                    name,
                                    "--server",
                                    servers[i % count].address,
                                    "--key-file",
                                    str(directory / f"{name}.key"),
                                    "--log-format",
                                    "json",
                                ],
                                stdout=log,
                                stderr=subprocess.STDOUT,
                                cwd=directory,
                            ),
                            log,
                        )
                    )
                address = servers[0].address
                give_up = time.monotonic() + FIRST_MATCH_TIMEOUT
                while _rated(address) == 0:
                    if time.monotonic() > give_up:
                        raise RuntimeError(
                            f"no ladder match rated within {FIRST_MATCH_TIMEOUT:.0f} s"
                        )
                    time.sleep(0.2)
                time.sleep(warmup)
                first, before, started = _rated(address), _finished(url), time.monotonic()
                time.sleep(seconds)
                last, after, ended = _rated(address), _finished(url), time.monotonic()
            finally:
                for process, log in entrants:
                    stop(process, 10)
                    log.close()
    window = ended - started
    decisions = sum(n for m, n in after.items() if m not in before)
    return {
        "hosts": count,
        "bots": bots,
        "players": players,
        "concurrency": concurrency,
        "seconds": round(window, 1),
        "matches": last - first,
        "matches_per_min": round((last - first) / window * 60, 1),
        "decisions_per_s": round(decisions / window, 1),
    }


def load(
    postgres: str | None,
    count: int,
    *,
    matches: int = 50,
    seconds: float = 10.0,
    warmup: float = 5.0,
) -> dict[str, Any]:
    """Returns the decisions per second of ``count`` hosts, each holding ``matches``
    four-player matches of a crowd that answers at once, and each host's CPU per
    decision; on the PostgreSQL server of ``postgres``, or (one host) an SQLite file
    when it is None."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-hosts-") as tmp,
        fresh_database(postgres, f"bench_hosts_load_{count}") as url,
    ):
        directory = Path(tmp)
        with hosts(directory, url, count) as servers:
            processes = [psutil.Process(s.pid) for s in servers]
            start_at = time.time() + warmup
            stop_at = start_at + seconds
            crowds = []
            for i, server in enumerate(servers):
                out = directory / f"crowd-{i}.json"
                log = open(directory / f"crowd-{i}.log", "wb")  # noqa: SIM115 (closed below)
                crowds.append(
                    (
                        out,
                        log,
                        python_module(
                            "bench.crowd",
                            "--server",
                            server.address,
                            "--organiser-key",
                            server.organiser_key,
                            "--matches",
                            str(matches),
                            "--players",
                            "4",
                            "--start-at",
                            str(start_at),
                            "--stop-at",
                            str(stop_at),
                            "--seed",
                            str(i),
                            "--out",
                            str(out),
                            log=log,
                        ),
                    )
                )
            time.sleep(max(0.0, start_at - time.time()))
            cpu_before = [_cpu(p) for p in processes]
            time.sleep(max(0.0, stop_at - time.time()))
            cpu = [_cpu(p) - b for p, b in zip(processes, cpu_before, strict=True)]
            for _, log, child in crowds:
                try:
                    child.wait(CROWD_GRACE)
                except subprocess.TimeoutExpired:
                    stop(child, 5)
                log.close()
            parts = [
                json.loads(out.read_text()) if out.exists() else {"decisions": 0, "errors": 1}
                for out, _, _ in crowds
            ]
    decisions = [p["decisions"] for p in parts]
    return {
        "hosts": count,
        "matches_per_host": matches,
        "seconds": seconds,
        "decisions_per_s": round(sum(decisions) / seconds, 1),
        "per_host_decisions_per_s": [round(d / seconds, 1) for d in decisions],
        "cpu_us_per_decision": [
            round(c / d * 1e6, 1) if d else None for c, d in zip(cpu, decisions, strict=True)
        ],
        "errors": sum(p.get("errors", 0) for p in parts),
    }


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def run(
    postgres: str,
    *,
    bots: int = 8,
    seconds: float = 30.0,
    matches: int = 50,
    load_seconds: float = 10.0,
) -> dict[str, Any]:
    """Returns the ladder and load figures with one host and with two."""
    return {
        "ladder": [ladder(postgres, n, bots=bots, seconds=seconds) for n in (1, 2)],
        "load": [load(postgres, n, matches=matches, seconds=load_seconds) for n in (1, 2)],
        # The same load on one host with the embedded SQLite file: the journal in a
        # side file, no database server (what PostgreSQL costs per decision).
        "load_sqlite": load(None, 1, matches=matches, seconds=load_seconds),
        "pinned": bool(pinned(0)),
        "cores": os.cpu_count(),
    }


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures of ``run`` as the lines of a text table."""
    lines = [
        f"hosts pinned to cores: {'yes' if result['pinned'] else 'no'} ({result['cores']} cores)"
    ]
    for row in result["ladder"]:
        lines.append(
            f"ladder, {row['hosts']} host(s): {row['matches_per_min']:.1f} matches/min,"
            f" {row['decisions_per_s']:.1f} decisions/s ({row['matches']} matches in"
            f" {row['seconds']} s; {row['bots']} random bots, {row['players']}"
            f" players, {row['concurrency']} at once per host)"
        )
    for row in [*result["load"], {**result["load_sqlite"], "hosts": "SQLite, 1"}]:
        lines.append(
            f"load, {row['hosts']} host(s): {row['decisions_per_s']:.1f} decisions/s"
            f" (per host {row['per_host_decisions_per_s']}; CPU per decision"
            f" {row['cpu_us_per_decision']} µs; {row['matches_per_host']} matches"
            f" per host; {row['errors']} errors)"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Runs the benchmark from the command line; returns its figures."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.hosts",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--postgres",
        required=True,
        metavar="URL",
        help="a PostgreSQL database whose user may create databases",
    )
    parser.add_argument("--bots", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0, help="the ladder's window")
    parser.add_argument("--matches", type=int, default=50, help="load: matches per host")
    parser.add_argument("--load-seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    result = run(
        args.postgres,
        bots=args.bots,
        seconds=args.seconds,
        matches=args.matches,
        load_seconds=args.load_seconds,
    )
    print("\n".join(table(result)))
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
