"""Leases and takeover on a real PostgreSQL database, with an injected clock.

Checked: a host whose lease lapsed loses its unfinished matches to exactly one live
host (two try at once), which resumes them from the journal; the host they were
taken from has its journal appends and its match ends refused, and finds nothing
of its own to resume when it starts again; a release by hand makes a lease lapse
at once (refused for a live lease unless forced), and only a restart lifts it; and
a ladder match created but never announced (the host stopped in between) has its
seats announced when it is resumed, by the host itself after a restart or by the
host that took it over, with that host's address."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.db.connection import StorageError
from server.db.hosts import HostRefusedError, Hosts
from server.db.ladder.store import LadderStore
from server.db.matches import Storage
from server.inputs import Abort
from server.ladder.ladder import Ladder
from server.ladder.matches import ServerMatches
from server.ladder.scheduler import Policy
from server.ladder.shared_lobby import reserve
from server.leases import Leases
from server.runners import Runners
from server.status import MatchStatus
from tests.server.clocks import ManualClock

from .test_hosts import MAMMAMIA

LEASE = 15.0


class Now:
    """The leases' clock: seconds, set by the test."""

    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


class Host:
    """One host of the database, in this process: its storage, matches and lease."""

    def __init__(self, url: str, name: str, now: Now) -> None:
        self.name = name
        self.address = f"{name}:1"
        self.storage = Storage(url, host_id=name)
        self.runners = Runners(self.storage, clock=ManualClock())
        self.leases = Leases(
            self.storage, self.runners, lambda: self.address, lease=LEASE, clock=now
        )
        self.leases.start()

    async def close(self) -> None:
        await self.storage.writer.flush()
        self.storage.close()
        self.leases.close()
        if self.runners.journal is not None:
            self.runners.journal.close()


@pytest.fixture
def now() -> Iterator[Now]:
    yield Now()


def test_a_lapsed_host_is_taken_over_once_and_fenced_off(postgres_url: str, now: Now) -> None:
    async def go() -> None:
        a = Host(postgres_url, "host-a", now)
        runner = a.runners.create_match(2, seed=9, names=("ada", "bob"))
        runner.join(0)
        runner.join(1)
        await runner.committed()
        await a.storage.writer.flush()
        match_id = runner.id
        b, c = Host(postgres_url, "host-b", now), Host(postgres_url, "host-c", now)

        now.t += LEASE - 1  # A's lease still runs: nothing to take
        assert await b.leases.check() == [] and await c.leases.check() == []
        now.t += 2  # A never renewed: lapsed; B and C beat at once
        taken = [t for ts in await asyncio.gather(b.leases.check(), c.leases.check()) for t in ts]
        assert len(taken) == 1 and taken[0].host == "host-a"
        assert taken[0].journalled == (match_id,) == taken[0].unfinished
        taker = b if match_id in b.runners.matches else c
        other = c if taker is b else b
        assert match_id not in other.runners.matches
        resumed = taker.runners.matches[match_id]
        assert resumed.match.joined == [True, True]  # as it was, from the journal
        assert resumed.match.status == runner.match.status
        assert await other.leases.check() == []  # nothing left to take

        # A was only cut off: its writes for the match it lost are refused.
        with pytest.raises(StorageError):
            await a.runners.journal.append(match_id, Abort("organiser"))  # type: ignore[union-attr]
        assert not await a.storage.end_match(
            match_id,
            MatchStatus.ABORTED,
            "{}",
            players=2,
            names=("ada", "bob"),
            ladder=False,
            created="2026-01-01T00:00:00.000+00:00",
        )
        row = taker.storage.match(match_id)
        assert row is not None and row.status == MatchStatus.RUNNING
        await a.close()

        # A starts again with its host id: nothing of its own is left to resume.
        again = Host(postgres_url, "host-a", now)
        assert again.runners.resume() == []
        hosts = {h.host: h for h in again.leases.hosts.hosts()}
        assert hosts["host-a"].unfinished == 0 and hosts["host-a"].live(now.t)
        assert hosts[taker.name].unfinished == 1
        for host in (again, b, c):
            await host.close()

    asyncio.run(go())


def test_a_release_by_hand_lapses_a_lease_until_its_host_restarts(
    postgres_url: str, now: Now
) -> None:
    async def go() -> None:
        a, b = Host(postgres_url, "host-a", now), Host(postgres_url, "host-b", now)
        runner = a.runners.create_match(2, seed=3)
        await a.storage.writer.flush()
        hosts = Hosts(postgres_url)
        with pytest.raises(HostRefusedError, match="live lease"):
            hosts.release("host-a", now.t, force=False)
        with pytest.raises(HostRefusedError, match="no host"):
            hosts.release("host-z", now.t, force=False)
        before = hosts.release("host-a", now.t, force=True)
        assert before.live(now.t) and before.unfinished == 1
        assert await a.leases.check() == []  # released: not renewed, takes nothing
        (taken,) = await b.leases.check()  # at once, without waiting for the lease
        assert taken.unfinished == (runner.id,) and runner.id in b.runners.matches
        assert not hosts.renew("host-a", "host-a:1", now.t, LEASE)
        hosts.start("host-a", "host-a:1", now.t, LEASE)  # a restart lifts it
        assert hosts.renew("host-a", "host-a:1", now.t, LEASE)
        hosts.close()
        await a.close()
        await b.close()

    asyncio.run(go())


@pytest.mark.parametrize("resumer", ["restart", "takeover"])
def test_a_ladder_match_never_announced_is_announced_when_resumed(
    postgres_url: str, now: Now, resumer: str
) -> None:
    async def go() -> None:
        a = Host(postgres_url, "host-a", now)
        store = LadderStore(postgres_url)
        for name in ("ada", "bob"):
            store.register(name, now=now.t)
            store.enter(name, "host-a", f"s-{name}", now.t)
        # A's pass records the match with its seats, and A creates it ...
        (formed,) = store.take(
            "host-a", "host-a:1", now.t - 5, lambda w: [tuple(n for n, *_ in w)], reserve
        )
        matches = ServerMatches(a.runners)
        await matches.create(formed.names, match_id=formed.match_id, tokens=formed.tokens)
        await a.storage.writer.flush()
        # ... and stops before it announces the seats: the bots are told nothing.
        assert store.seats(list(formed.names)) == {}
        await a.close()

        name = "host-a" if resumer == "restart" else "host-b"
        host = Host(postgres_url, name, now)
        other = LadderStore(postgres_url)
        ladder = Ladder(other, ServerMatches(host.runners), Policy(), host_id=name)
        if resumer == "restart":
            ladder.recover(resumed=set(host.runners.resume()))
        else:
            host.leases.on_taken(ladder.take_over)
            now.t += LEASE + 1
            (taken,) = await host.leases.check()
            assert taken.ladder == (formed.match_id,)
        seats = store.seats(list(formed.names))
        assert {s.match_id for s in seats.values()} == {formed.match_id}
        assert [seats[n].token for n in formed.names] == list(formed.tokens)
        assert {s.host for s in seats.values()} == {name}
        assert {s.address for s in seats.values()} == {f"{name}:1"}
        assert all(s.commitment for s in seats.values())
        ladder.settling.stopped = True
        ladder.writer.close()
        other.close()
        store.close()
        await host.close()

    asyncio.run(go())


def test_the_hosts_commands_list_and_release_and_log_who_and_why(
    postgres_url: str, tmp_path: Path
) -> None:
    hosts = Hosts(postgres_url)
    hosts.start("host-a", "10.0.0.1:50051", time.time(), LEASE)
    hosts.close()

    def mammamia(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(MAMMAMIA), "hosts", *args, "--db", postgres_url],
            capture_output=True,
            text=True,
            timeout=60,
        )

    listed = mammamia("list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split("\n")[1].split()[:3] == ["host-a", "10.0.0.1:50051", "live"]
    refused = mammamia("release", "host-a", "--reason", "node lost")
    assert refused.returncode == 1 and "live lease" in refused.stderr
    released = mammamia("release", "host-a", "--reason", "node lost", "--force")
    assert released.returncode == 0, released.stderr
    assert "released host 'host-a'" in released.stdout
    logged = released.stdout + released.stderr
    assert "host_released" in logged and "node lost" in logged
    (row,) = json.loads(mammamia("list", "--json").stdout)
    assert (row["host"], row["lease"], row["unfinished"]) == ("host-a", "released", 0)
    on_a_file = subprocess.run(
        [str(MAMMAMIA), "hosts", "list", "--db", str(tmp_path / "arena.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert on_a_file.returncode == 2 and "PostgreSQL" in on_a_file.stderr
