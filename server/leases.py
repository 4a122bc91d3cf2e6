"""A host's lease on a shared PostgreSQL database, and the takeover of the matches of
a host whose lease lapsed (the rows: ``server.db.hosts``).

Every host renews its lease every ``lease / 3`` seconds (its beat). A host whose
lease has lapsed (``lease`` seconds without a renewal: it is gone, not restarting)
loses its unfinished matches to the first live host whose beat finds it: that host
moves their rows to itself in one transaction, resumes the journalled ones exactly
as a restarted host resumes its own (``Runners.resume``), marks the others aborted,
and tells the extensions (the ladder re-announces the seats of its matches, which
now name this host's address). So a host that never comes back loses no match: its
matches go on within about ``lease + lease / 3`` seconds of its last renewal.

A host takes its lease at start-up before it resumes its own matches, so a host
that restarts in time keeps them; one that restarts after a takeover finds none.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog

from .db.connection import ERRORS
from .db.hosts import Hosts, Taken
from .db.matches import Storage
from .runners import Runners

log = structlog.get_logger()

#: Seconds a lease runs without a renewal (``mammamia serve --host-lease``).
DEFAULT_LEASE_S = 15.0

#: What a hook is given after a takeover: what was taken, and which matches resumed.
TakenHook = Callable[[Taken, list[str]], Awaitable[None]]

#: The reason stored for a match taken over that could not be resumed.
NOT_RESUMED = "its host went away, and its journal could not resume it"


class Leases:
    """This host's lease, renewed on its beat, and its takeovers (see the module)."""

    def __init__(
        self,
        storage: Storage,
        runners: Runners,
        address: Callable[[], str],
        *,
        lease: float = DEFAULT_LEASE_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.storage = storage
        self.runners = runners
        self.host = storage.host_id
        self.address = address
        self.lease = lease
        self.beat = lease / 3
        self.clock = clock
        self.hosts = Hosts(storage.path)
        self._hooks: list[TakenHook] = []
        self._released = False

    def close(self) -> None:
        """Closes the connection (once the writer has run every write)."""
        self.hosts.close()

    def on_taken(self, hook: TakenHook) -> None:
        """Awaits ``hook(taken, resumed)`` after each takeover, once the matches taken
        have resumed: for an extension to follow the matches it knows of."""
        self._hooks.append(hook)

    def start(self) -> None:
        """Takes this host's lease (at start-up, before it resumes its own matches, on
        the calling thread)."""
        self.hosts.start(self.host, self.address(), self.clock(), self.lease)

    async def run(self) -> None:
        """Renews the lease and takes over lapsed hosts' matches every beat, until
        cancelled. A beat that fails (the database away) is logged; the next tries
        again."""
        while True:
            try:
                await self.check()
            except ERRORS as e:
                log.warning("lease_beat_failed", host=self.host, error=str(e))
            except Exception:
                # Never the end of the beats: a host that stopped renewing would lose
                # its own matches to another host.
                log.exception("lease_beat_failed", host=self.host)
            await asyncio.sleep(self.beat)

    async def check(self) -> list[Taken]:
        """Returns what this beat took over, after renewing the lease (a host whose
        lease was released by hand takes nothing over until it restarts)."""
        now = self.clock()
        writer = self.storage.writer
        if not await writer.run(self.hosts.renew, self.host, self.address(), now, self.lease):
            if not self._released:
                log.error(
                    "host_lease_released",
                    host=self.host,
                    hint="its matches go to another host; restart this one to lease again",
                )
            self._released = True
            return []
        if not self.runners.accepting:
            return []  # draining: this host takes on nothing more
        out = []
        for gone in await writer.run(self.hosts.lapsed, now, self.host):
            taken = await writer.run(self.hosts.take_over, self.host, self.address(), gone, now)
            if taken:
                await self._resume(taken)
                out.append(taken)
        return out

    async def _resume(self, taken: Taken) -> None:
        unfinished = set(taken.unfinished)
        journal = self.runners.journal
        if journal is not None:
            # A journal whose match has ended (its end stored just before its host
            # went) has nothing to resume.
            for match_id in taken.journalled:
                if match_id not in unfinished:
                    journal.forget(match_id)
        resumed = self.runners.resume([m for m in taken.journalled if m in unfinished])
        lost = [m for m in taken.unfinished if m not in resumed]
        await self.storage.writer.run(self.hosts.abort, lost, NOT_RESUMED)
        log.warning(
            "host_taken_over",
            host=taken.host,
            by=self.host,
            resumed=resumed,
            aborted=lost,
            ladder=list(taken.ladder),
        )
        for hook in self._hooks:
            await hook(taken, resumed)
