"""The running ladder: bots enter, are assigned seats, and their results are rated.

One :class:`Ladder` per server. Its life:

1. start-up (:meth:`Ladder.recover`): every ladder match the store still holds as
   running was cut off by a crash. If the server stored its end (the record is
   written before the result is announced), the result is taken from there;
   otherwise the match is marked aborted, unrated. Then any result not yet rated
   is rated, so nothing announced is lost and nothing is rated twice.
2. :meth:`Ladder.enter`: a bot with a valid key waits on its stream; the
   scheduler seats it; each match is created through the server's match host
   (a :class:`MatchHost`: :class:`~server.ladder.server_host.ServerHost` on a server),
   announced to its bots as an :class:`Assignment`, awaited, stored and rated.
3. :meth:`Ladder.run` keeps forming matches until cancelled (server shutdown).

With ``duplicate`` (``mammamia serve --ladder-duplicate``) the bots the scheduler
seats together play a **duplicate set** instead of one match: one deal (one server
seed, committed to before the first match) once for every rotation of the seats,
one match after another, each rated as it ends. The records of the set's matches
but the last are sealed until the set ends (mammamia.fairness); then the ladder
completes them (:meth:`LadderStore.reveal_set`). A set is cut short when one of its
bots has left before its next match, a match of it is aborted, or the server stops
or restarts: the matches it finished count, the rest are never played, and its
records are completed at once. On PostgreSQL a ladder of duplicate sets is one
host's alone (``LadderStore.claim``): it schedules as on an SQLite file, never
through :attr:`Ladder.shared`.

While the server runs, the store's writes run on the ladder's writer thread, in
order, so the event loop never waits for the disk; the reads that return a lot
(standings, match lists) run on its reader thread (:attr:`Ladder.reader`), and the
few that stay on the loop read a row per bot at most (a key, the waiting bots'
ratings and games). The threads end with the process, after every write queued.

Names that never enter expire: a bot registered more than ``name_expiry`` seconds
ago that never opened an Enter stream is removed (checked periodically through the
writer, on the injected ``clock``), and at most ``max_unentered`` such names are
registered at once (:class:`~server.db.ladder.rows.LadderFullError` beyond).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import time
from collections.abc import Callable, Collection, Coroutine, Sequence
from typing import ParamSpec, TypeVar

import structlog

from mammamia.fairness import DealSet, commitment, new_server_seed
from server.db.connection import ERRORS
from server.db.ladder.rows import ALL_PLAYERS, Standing
from server.db.ladder.store import LadderStore
from server.db.writer import Writer

# Re-exported: what describes a seat on the wire has imported it from here.
from .assignment import Assignment as Assignment
from .hosts import Shared
from .match_host import REPLACED, Entry, EntryQueue

# Re-exported: the servicer, the server's match host and the tests import them from here.
from .match_host import LadderClosedError as LadderClosedError
from .match_host import MatchHost as MatchHost
from .match_host import Outcome as Outcome
from .match_host import ReplacedError as ReplacedError
from .match_host import UnknownBotError as UnknownBotError
from .ratings import initial
from .scheduler import Policy, Scheduler, Waiting

log = structlog.get_logger()

#: How long a registered name that never entered is kept (seconds; 0: for ever).
DEFAULT_NAME_EXPIRY_S = 24 * 60 * 60

#: How many registered names that never entered may be held at once.
DEFAULT_MAX_UNENTERED = 10_000

#: The longest pause between two tries of a ladder write that failed (seconds).
STORE_RETRY_MAX_S = 5.0

#: How long a failing ladder write is still tried once the ladder has stopped (seconds).
STORE_GIVE_UP_S = 20.0

P = ParamSpec("P")
T = TypeVar("T")

#: How often names are checked for expiry, at most (a tenth of the expiry if shorter).
EXPIRY_CHECK_S = 60.0


class Ladder:
    """Entries, the scheduler's matches, and their results in the store."""

    def __init__(
        self,
        store: LadderStore,
        host: MatchHost,
        policy: Policy,
        *,
        settle: float = 0.25,
        clock: Callable[[], float] = time.time,
        name_expiry: float = DEFAULT_NAME_EXPIRY_S,
        max_unentered: int = DEFAULT_MAX_UNENTERED,
        duplicate: bool = False,
        host_id: str = "",
        advertise: Callable[[], str] = str,
    ) -> None:
        self.store = store
        self.duplicate = duplicate
        self.host = host
        self.writer = Writer("ladder-writer")
        self.reader = store.reader()
        self.clock = clock
        self.name_expiry = name_expiry
        self.max_unentered = max_unentered
        self.scheduler = Scheduler(policy, self._waiting, self._play, settle=settle)
        self._streams: dict[str, EntryQueue] = {}
        self._settling: set[asyncio.Future[None]] = set()
        self._seated: dict[str, Assignment] = {}
        # The standings last read per scope, with the count of results rated when the
        # read began: standings change only when a result is rated.
        self._rated = 0
        self._standings: dict[int, tuple[int, tuple[int, list[Standing]]]] = {}
        self.closed = False
        #: On a database that other hosts may share (PostgreSQL): this host's part of
        #: the one ladder they run (``server.ladder.hosts``); None on an SQLite file.
        #: Duplicate sets are played on a ladder of one host (``LadderStore.claim``).
        self.shared: Shared | None = (
            Shared(self, host_id, advertise) if store.shared and not duplicate else None
        )

    def recover(self, resumed: Collection[str] = ()) -> None:
        """Settles the matches a crash cut off, then rates every unrated result.
        ``resumed`` are the matches the server resumed from its journal: they are
        awaited and rated when they end, as if no crash had happened.

        A duplicate set a crash cut off is cut short: its finished matches count, and
        its records are completed once its last match still going (resumed) has ended.

        On a shared database, only the matches this host ran are settled (the other
        hosts run theirs).

        For start-up, before the server serves: it writes on the calling thread."""
        if self.shared is not None:
            self.shared.recover()
        running = (
            self.store.running()
            if self.shared is None
            else self.store.running(host=self.shared.host_id)
        )
        resuming: dict[str, asyncio.Future[None]] = {}
        for match_id in running:
            outcome = self.host.stored_outcome(match_id)
            if outcome is not None and outcome.status == "finished":
                if self._store_result(match_id, outcome):
                    self._log_finished(match_id, outcome)
                log.info("ladder_match_recovered", match=match_id)
            elif match_id in resumed:
                resuming[match_id] = self.start_settling(self._settle_resumed(match_id))
                log.info("ladder_match_resumed", match=match_id)
            else:
                self.store.abort_match(match_id)
                log.info("ladder_match_aborted", match=match_id, reason="server restarted")
        for set_id in self.store.playing_sets():
            row = self.store.deal_set(set_id)
            going = [resuming[m] for m in (row.matches if row else ()) if m in resuming]
            if going:
                self.start_settling(self._end_set(set_id, "the server restarted", going))
            elif status := self.store.reveal_set(set_id, "the server restarted"):
                log.info(
                    "ladder_set_ended", set=set_id, status=status, reason="the server restarted"
                )
        rated = self.store.apply_ratings()
        if rated:
            log.info("ladder_ratings_applied", matches=rated)

    async def run(self) -> None:
        """Forms and plays matches, and expires names that never entered, until
        cancelled; then ends every Enter stream."""
        expiring = asyncio.create_task(self._expire_periodically(), name="ladder-expiry")
        try:
            await (self.scheduler.run() if self.shared is None else self.shared.run())
        finally:
            self.closed = True
            expiring.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await expiring
            for queue in self._streams.values():
                queue.put_nowait(None)

    async def register(self, name: str) -> str:
        """Returns the new bot's secret key; raises NameTakenError, LadderFullError
        (too many names that never entered) or LadderError."""
        key = await self.writer.run(
            self.store.register, name, now=self.clock(), max_unentered=self.max_unentered
        )
        log.info("ladder_bot_registered", bot=name)
        return key

    async def enter(self, name: str, key: str) -> Entry:
        """Returns the bot's entry, recorded before this returns: its assignments, for
        as long as the caller listens, until the caller closes it.

        Raises UnknownBotError for an unknown name or a wrong key, LadderClosedError
        once the ladder has stopped (both at once, before any assignment). The entry
        raises ReplacedError when a newer entry of the same bot takes over (a
        reconnect, or a second copy of the bot: only one plays); the ladder stopping
        ends it without error. A bot's first entry is recorded (through the writer,
        so that it and the expiry of the name are ordered): from then on the name
        never expires.
        """
        if self.closed:
            raise LadderClosedError("the ladder has stopped: the server is shutting down")
        if not self.store.check_key(name, key):
            raise UnknownBotError(f"bot {name!r} is not registered or the key is wrong")
        if self.store.entered(name) is None and not await self.writer.run(
            self.store.mark_entered, name, key, self.clock()
        ):
            raise UnknownBotError(
                f"bot {name!r} is not registered (it never entered and "
                "its name expired): register it again"
            )
        return self._entry(name) if self.shared is None else await self.shared.entry(name)

    async def standings(self, players: int = ALL_PLAYERS) -> tuple[int, list[Standing]]:
        """Returns (rated matches, standings best first) of all matches or of one
        player count: read on the reader thread once after each rated result, and
        from memory until the next."""
        if self.shared is not None:
            # Other hosts rate results too: every reading is read afresh.
            return await self.reader.standings(players)
        rated = self._rated
        known = self._standings.get(players)
        if known is not None and known[0] == rated:
            return known[1]
        standings = await self.reader.standings(players)
        if self._rated == rated:  # no result rated meanwhile: good until the next
            self._standings[players] = (rated, standings)
        return standings

    async def expire_names(self) -> list[str]:
        """Removes the names registered more than ``name_expiry`` seconds ago (on the
        clock) that never entered; returns them. Nothing expires with an expiry of 0."""
        if self.name_expiry <= 0:
            return []
        expired = await self.writer.run(self.store.expire, self.clock() - self.name_expiry)
        if expired:
            log.info(
                "ladder_names_expired",
                count=len(expired),
                names=expired[:20],
                expiry_s=self.name_expiry,
            )
        return expired

    async def _expire_periodically(self) -> None:
        if self.name_expiry <= 0:
            return
        every = min(EXPIRY_CHECK_S, self.name_expiry / 10)
        while True:
            try:
                await self.expire_names()
            except Exception:
                # A failed pass (the disk) is logged; the next one tries again.
                log.exception("ladder_expiry_failed")
            await asyncio.sleep(every)

    def _entry(self, name: str) -> Entry:
        queue: EntryQueue = asyncio.Queue()
        replaced = self._streams.get(name)
        if replaced is not None:
            replaced.put_nowait(REPLACED)
        self._streams[name] = queue
        current = self._seated.get(name)
        if current is not None:
            # Back in the middle of a match (a lost connection): the seat is still its own.
            queue.put_nowait(current)
        self.scheduler.join(name)
        log.info("ladder_bot_entered", bot=name)

        def leave() -> None:
            if self._streams.get(name) is queue:
                del self._streams[name]
            self.scheduler.leave(name)
            log.info("ladder_bot_left", bot=name)

        return Entry(name, queue, leave)

    def _waiting(self, names: list[str]) -> list[Waiting]:
        # On the loop: a row per waiting bot, from the ratings and the tallies.
        known = self.store.waiting(names)
        fresh = (initial(), 0)
        return [Waiting(n, known.get(n, fresh)[0].mu, known.get(n, fresh)[1]) for n in names]

    async def _play(self, names: tuple[str, ...]) -> None:
        if self.duplicate:
            await self._play_set(names)
        else:
            await self._play_match(names, None, None)

    async def _play_set(self, names: tuple[str, ...]) -> None:
        """Plays one deal once for every rotation of ``names``' seats, match after match,
        until the set is complete or cut short; then reveals its seed in its records."""
        n = len(names)
        set_id = f"set-{secrets.token_hex(8)}"
        server_seed = new_server_seed()
        committed = commitment(set_id, server_seed)
        reason = "the server stopped"
        going: list[asyncio.Future[None]] = []
        try:
            # The set's row first: its commitment is published with its first match.
            # (Inside the try: a drain that cancels the set while the row is written
            # still ends it, after the row, as the writer runs in order.)
            await self.writer.run(self.store.start_set, set_id, names, server_seed, committed)
            log.info("ladder_set_started", set=set_id, names=list(names), commitment=committed)
            for index in range(n):
                gone = [b for b in names if not self.scheduler.is_joined(b)]
                if index and gone:
                    reason = f"{', '.join(gone)} left the ladder"
                    break
                # Match ``index``: the bot at seat s of the first match sits at s + index.
                seated = tuple(names[(seat - index) % n] for seat in range(n))
                outcome = await self._play_match(
                    seated, (DealSet(set_id, index, n), server_seed), going
                )
                if outcome is None:
                    break
                if outcome.status != "finished":
                    reason = "a match of the set was aborted"
                    break
        except BaseException:
            # Cancelled (the server drains) or failed: the set still ends, once its
            # match under way has (the drain awaits it, after the matches' grace).
            self.start_settling(self._end_set(set_id, reason, going))
            raise
        await self._end_set(set_id, reason, going)

    async def _end_set(
        self, set_id: str, reason: str, going: Sequence[asyncio.Future[None]]
    ) -> None:
        """Once the set's matches still going have ended, ends it (complete, or cut
        short for ``reason``) and completes its sealed records with its seed."""
        await asyncio.gather(*going, return_exceptions=True)
        status = await self.writer.run(self.store.reveal_set, set_id, reason)
        if status is not None:
            log.info(
                "ladder_set_ended",
                set=set_id,
                status=status,
                reason=None if status == "complete" else reason,
            )

    async def _play_match(
        self,
        names: tuple[str, ...],
        deal_set: tuple[DealSet, str] | None,
        going: list[asyncio.Future[None]] | None,
    ) -> Outcome | None:
        """Returns the outcome of one match of ``names`` (None when the ladder closed
        before it was created); ``going`` receives the task that settles it."""
        try:
            match_id, tokens, committed = await self.host.create(names, deal_set)
        except LadderClosedError:
            return None
        place = deal_set[0] if deal_set is not None else None
        # One task writes the match's row and then its result, and a drain does not
        # cancel it: a match once created is always settled, never left running.
        stored: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        outcome: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        settled = self.start_settling(
            self._settle(match_id, names, stored, committed, place, outcome)
        )
        if going is not None:
            going.append(settled)
        # The row first: a bot told its seat finds its match in the ladder's lists.
        await asyncio.shield(stored)
        for seat, (name, token) in enumerate(zip(names, tokens, strict=True)):
            assignment = Assignment(
                match_id,
                token,
                seat,
                len(names),
                committed,
                place.set_id if place else None,
                place.index if place else 0,
            )
            self._seated[name] = assignment
            queue = self._streams.get(name)
            # A bot gone since it was seated is played by the server's default policy.
            if queue is not None:
                queue.put_nowait(assignment)
        # Shielded: when the ladder stops (the server drains), the match still ends
        # and its result is stored.
        await asyncio.shield(settled)
        return outcome.result() if outcome.done() else None

    def start_settling(self, settling: Coroutine[object, object, None]) -> asyncio.Future[None]:
        """Returns the task of ``settling`` (a match to its stored result), which the
        drain awaits (:meth:`settled`) and never cancels."""
        task = asyncio.ensure_future(settling)
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)
        return task

    @property
    def running(self) -> list[asyncio.Future[None]]:
        """Returns the matches this server plays for the ladder, until each result is
        stored."""
        return list(self._settling)

    async def settled(self) -> None:
        """Returns once every match the ladder started has its result stored (the
        server's drain awaits it after the matches have ended)."""
        # Again until none is left: a settling task may start another.
        while pending := [t for t in self._settling if not t.done()]:
            await asyncio.gather(*pending, return_exceptions=True)

    async def _settle(
        self,
        match_id: str,
        names: tuple[str, ...],
        stored: asyncio.Future[None],
        committed: str = "",
        place: DealSet | None = None,
        ended: asyncio.Future[Outcome] | None = None,
    ) -> None:
        try:
            await self.writer.run(
                self.store.start_match,
                match_id,
                names,
                committed,
                place.set_id if place else None,
                place.index if place else None,
            )
        except BaseException as e:
            stored.set_exception(e)
            raise
        stored.set_result(None)
        log.info("ladder_match_started", match=match_id, names=list(names))
        try:
            outcome = await self.host.outcome(match_id)
        finally:
            for name in names:
                if (seat := self._seated.get(name)) is not None and seat.match_id == match_id:
                    del self._seated[name]
        await self.settle_as(match_id, outcome)
        if ended is not None:
            ended.set_result(outcome)

    async def _settle_resumed(self, match_id: str) -> None:
        await self.settle_as(match_id, await self.host.outcome(match_id))

    async def settle_as(self, match_id: str, outcome: Outcome) -> None:
        """Stores and rates a finished match's result, or marks it aborted; a write
        that fails (the database away) is tried again until it is stored (see
        :meth:`stored`)."""
        if outcome.status == "finished":
            new = await self.stored(match_id, self._store_result, match_id, outcome)
            self._rated += 1  # (also when not new: read again, never stale)
            if new:
                self._log_finished(match_id, outcome)
        else:
            await self.stored(match_id, self.store.abort_match, match_id)
            log.info("ladder_match_aborted", match=match_id)

    async def stored(
        self, match_id: str, write: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Returns what the writer's ``write(*args, **kwargs)`` returns, trying again
        after a failure (with growing pauses, up to :data:`STORE_RETRY_MAX_S`) for as
        long as the server runs, and for :data:`STORE_GIVE_UP_S` more once the ladder
        has stopped; then raises the last failure.

        Why: a match's row marks its bots as seated, on every host of a shared
        database; a result left unwritten would keep them out of the ladder (until
        this host restarts and settles it)."""
        pause = 0.2
        gave_up_at: float | None = None
        for attempt in itertools.count(1):
            try:
                return await self.writer.run(write, *args, **kwargs)
            except ERRORS as e:
                now = time.monotonic()
                if self.closed:
                    gave_up_at = gave_up_at or now + STORE_GIVE_UP_S
                    if now >= gave_up_at:
                        raise
                log.warning(
                    "ladder_store_failed",
                    match=match_id,
                    attempt=attempt,
                    error=str(e),
                    retry_s=pause,
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, STORE_RETRY_MAX_S)
        raise AssertionError("unreachable")

    def _store_result(self, match_id: str, outcome: Outcome) -> bool:
        """Returns whether this call stored the match's result (then rated it)."""
        new = self.store.finish_match(match_id, outcome.seats())
        # Also when not new: a first try may have stored the result and then failed.
        self.store.apply_ratings()
        return new

    def _log_finished(self, match_id: str, outcome: Outcome) -> None:
        row = self.store.match(match_id)
        log.info(
            "ladder_match_finished",
            match=match_id,
            names=list(row.names) if row else [],
            ranks=list(outcome.ranks),
            delivered=list(outcome.delivered),
        )
