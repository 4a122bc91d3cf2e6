"""One ladder over many match hosts: the ladder's side of a shared PostgreSQL database.

Several ``mammamia serve`` processes on one PostgreSQL database run one ladder, and
the database is the only thing they share (no coordinator process):

- **Entries are rows.** A bot's Enter stream, on whichever host it opened, is a row
  of ``ladder_entries`` (bot, host, stream id, entered, heartbeat). Each host beats
  for its streams every ``beat`` seconds, and holds a presence lock for as long as
  its process runs (``LadderStore.claim``); a row whose host holds no presence (it
  died: PostgreSQL ended its session) or whose heartbeat is older than ``stale``
  seconds (its host is cut off from the database) is passed over. A newer entry of
  the same bot replaces the row, and the host of the older stream, seeing another
  stream id, ends it as replaced.
- **Scheduling is a transaction.** Every ``tick`` (jittered, so that the hosts take
  turns), a host with a free match slot runs one pass
  (:meth:`~server.db.ladder.store.LadderStore.take`): under the ladder's advisory lock
  (the one its results and ratings take, so passes of all hosts and the writes that
  free bots run one at a time) it reads the bots waiting anywhere (alive and not
  seated in a running match), forms at most one match with the pure
  :func:`~server.ladder.scheduler.form_matches`, and records it as running on this
  host with its seats before it commits (the seats' tokens and the match's
  commitment are published once the match exists: ``LadderStore.publish``). A bot is
  in one running match at a time across all hosts, because a pass sees the seats
  every earlier pass committed.
- **The forming host runs the match.** It creates the match with the recorded id
  and tokens and tells the bots whose streams it holds at once.
- **Every host announces to its own streams.** Each tick it reads the seats of its
  streams' bots in running matches (one statement) and sends each new one as an
  :class:`~server.ladder.assignment.Assignment`, naming the running host's advertised
  address when that is another host. A bot that enters again, through any host, in
  the middle of a match is sent its seat again.
- **Results and ratings** are written by the running host as on one host: the
  result once (a match that is not running is not finished again), the ratings in
  finish order exactly once (``LadderStore.apply_ratings``, under the same lock).

A host that dies: its bots' streams on it end (their bots enter again, anywhere);
its running matches stay recorded as running on it, and their bots stay seated,
until it restarts and resumes them from its journal (or marks the ones it cannot
resume aborted). Nothing the other hosts do depends on it.

Times are the injected clock's (``Ladder.clock``); the hosts' clocks must agree to
well within ``stale`` (NTP does).
"""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import Callable, Coroutine, Sequence
from typing import ParamSpec, Protocol, TypeVar

import structlog

from server.db.ladder.reads import LadderReader
from server.db.ladder.rows import Formed, Seated
from server.db.ladder.store import LadderStore
from server.db.writer import Writer
from server.tokens import new_match_id, new_token

from .assignment import Assignment
from .match_host import REPLACED, Entry, EntryQueue, MatchHost, Outcome
from .ratings import Rating
from .scheduler import Scheduler, Waiting, form_matches

log = structlog.get_logger()

P = ParamSpec("P")
T = TypeVar("T")

#: Seconds between a host's passes and announcements (jittered by half either way).
DEFAULT_TICK_S = 0.25
#: Seconds between a host's heartbeats for its Enter streams.
DEFAULT_BEAT_S = 1.0
#: An entry whose heartbeat is older than this many seconds is not scheduled.
DEFAULT_STALE_S = 5.0

#: While ticks fail, one is logged every this many seconds.
FAILING_LOG_S = 10.0


def reserve(players: int) -> tuple[str, Sequence[str]]:
    """Returns a new match id and ``players`` new seat tokens."""
    return new_match_id(), [new_token() for _ in range(players)]


class Ladder(Protocol):
    """What this part needs of the ladder it belongs to (``server.ladder.ladder``)."""

    store: LadderStore
    host: MatchHost
    writer: Writer
    reader: LadderReader
    clock: Callable[[], float]
    scheduler: Scheduler
    closed: bool

    @property
    def running(self) -> list[asyncio.Future[None]]:
        """Returns the matches this server plays for the ladder."""
        ...

    def start_settling(self, settling: Coroutine[object, object, None]) -> asyncio.Future[None]:
        """Returns the task of ``settling``, which the drain awaits."""
        ...

    async def settle_as(self, match_id: str, outcome: Outcome) -> None:
        """Stores and rates a finished match's result, or marks it aborted."""
        ...

    async def stored(
        self, match_id: str, write: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Returns what ``write`` returns on the writer, tried again after failures."""
        ...


class Shared:
    """This host's part of a ladder that many hosts share (see the module)."""

    def __init__(
        self,
        ladder: Ladder,
        host_id: str,
        advertise: Callable[[], str],
        *,
        tick: float = DEFAULT_TICK_S,
        beat: float = DEFAULT_BEAT_S,
        stale: float = DEFAULT_STALE_S,
        rng: random.Random | None = None,
    ) -> None:
        self.ladder = ladder
        self.host_id = host_id
        self.advertise = advertise
        self.tick = tick
        self.beat = beat
        self.stale = stale
        self._rng = rng or random.Random()
        # The bot's open stream on this host: its id and its queue.
        self._streams: dict[str, tuple[str, EntryQueue]] = {}
        self._announced: dict[str, str] = {}  # bot -> match last sent on its stream

    def recover(self) -> None:
        """Removes this host's entries (its streams ended with its last run) and takes
        the running matches recorded before hosts were named. For start-up, on the
        calling thread."""
        store = self.ladder.store
        cleared = store.clear_entries(self.host_id)
        adopted = store.adopt(self.host_id)
        if cleared or adopted:
            log.info("ladder_host_recovered", host=self.host_id, entries=cleared, adopted=adopted)

    async def entry(self, name: str) -> Entry:
        """Returns the bot's entry through this host, its row written (see
        ``Ladder.enter``)."""
        ladder = self.ladder
        stream = secrets.token_hex(8)
        queue: EntryQueue = asyncio.Queue()
        try:
            await ladder.writer.run(ladder.store.enter, name, self.host_id, stream, ladder.clock())
        except BaseException:
            # (Cancelled while the row was written: it goes again, after it.)
            ladder.writer.send(ladder.store.leave, name, stream)
            raise
        replaced = self._streams.get(name)
        if replaced is not None:
            replaced[1].put_nowait(REPLACED)
        self._streams[name] = (stream, queue)
        self._announced.pop(name, None)  # a seat held is sent again on this stream
        log.info("ladder_bot_entered", bot=name, host=self.host_id)

        def leave() -> None:
            current = self._streams.get(name)
            if current is not None and current[0] == stream:
                del self._streams[name]
                self._announced.pop(name, None)
                ladder.writer.send(ladder.store.leave, name, stream)
            log.info("ladder_bot_left", bot=name)

        return Entry(name, queue, leave)

    async def run(self) -> None:
        """Beats, announces and schedules every tick until cancelled; then ends every
        Enter stream on this host."""
        last_beat = -float("inf")
        failing = False
        logged = -float("inf")
        try:
            while True:
                now = self.ladder.clock()
                if now - last_beat >= self.beat:
                    self.ladder.writer.send(
                        self._beat, [stream for stream, _ in self._streams.values()], now
                    )
                    last_beat = now
                try:
                    await self.announce()
                    await self.schedule(now)
                except Exception:
                    # A failed tick (the database away) is logged, then again every
                    # FAILING_LOG_S while ticks fail; the next one tries again.
                    if not failing or now - logged >= FAILING_LOG_S:
                        log.exception("ladder_tick_failed", host=self.host_id)
                        logged = now
                    failing = True
                else:
                    if failing:
                        log.info("ladder_tick_recovered", host=self.host_id)
                    failing = False
                await asyncio.sleep(self.tick * self._rng.uniform(0.5, 1.5))
        finally:
            for _, queue in self._streams.values():
                queue.put_nowait(None)

    def _beat(self, streams: list[str], now: float) -> None:
        """Keeps this host's claim on the ladder (its presence, which other hosts'
        passes read) and marks its streams' entries alive. On the writer thread."""
        store = self.ladder.store
        if store.keep_claim():
            log.info("ladder_claim_taken_again", host=self.host_id)
        store.beat(self.host_id, streams, now)

    async def announce(self) -> None:
        """Sends each bot with a stream here its seat in a running match, once per
        stream, and ends the streams that a newer entry elsewhere replaced."""
        # The streams as they were when the read began: a stream opened during the read
        # (its row written before it counts here) waits for the next tick.
        read = {name: stream for name, (stream, _) in self._streams.items()}
        if not read:
            return
        seats, entries = await self.ladder.reader.streams(list(read))
        for name, stream in read.items():
            current = self._streams.get(name)
            if current is None or current[0] != stream:
                continue
            queue = current[1]
            entry = entries.get(name)
            if entry is not None and entry[1] != stream:
                del self._streams[name]
                self._announced.pop(name, None)
                queue.put_nowait(REPLACED)
                continue
            seat = seats.get(name)
            if seat is not None:
                self._send(name, seat)

    def _send(self, name: str, seat: Seated) -> None:
        current = self._streams.get(name)
        if current is None or self._announced.get(name) == seat.match_id:
            return
        self._announced[name] = seat.match_id
        here = seat.host == self.host_id
        current[1].put_nowait(
            Assignment(
                seat.match_id,
                seat.token,
                seat.seat,
                seat.players,
                seat.commitment,
                host_address="" if here else seat.address,
            )
        )

    async def schedule(self, now: float) -> None:
        """Runs one scheduling pass when this host has a free match slot, and starts
        the match it formed (if any)."""
        ladder = self.ladder
        if ladder.closed or len(ladder.running) >= ladder.scheduler.policy.concurrency:
            return
        # A task the drain awaits, shielded: a pass committed on the writer thread is
        # followed through (its matches played, or marked aborted) even when the
        # server drains meanwhile, so that no match is left recorded as running.
        await asyncio.shield(ladder.start_settling(self._pass(now)))

    async def _pass(self, now: float) -> None:
        ladder = self.ladder
        formed = await ladder.writer.run(
            ladder.store.take, self.host_id, self.advertise(), now - self.stale, self._form, reserve
        )
        for match in formed:
            ladder.start_settling(self._play(match))

    def _form(self, waiting: list[tuple[str, Rating, int]]) -> list[tuple[str, ...]]:
        """Returns at most one match of the waiting bots (on the writer thread, inside
        the pass's transaction): one per pass lets every host with a free slot take
        its turn."""
        policy = self.ladder.scheduler.policy
        return form_matches(
            [Waiting(name, rating.mu, games) for name, rating, games in waiting],
            policy,
            policy.concurrency - 1,
            self._rng,
        )

    async def _play(self, formed: Formed) -> None:
        """Creates the match the pass recorded, tells the bots with streams here, and
        stores its result; a match that cannot be created is marked aborted (its bots
        wait again)."""
        ladder = self.ladder
        try:
            _, _, committed = await ladder.host.create(
                formed.names, match_id=formed.match_id, tokens=formed.tokens
            )
        except Exception as e:  # LadderClosedError (a drain) or a failure
            log.warning("ladder_match_not_created", match=formed.match_id, error=repr(e))
            await ladder.stored(formed.match_id, ladder.store.abort_match, formed.match_id)
            return
        log.info(
            "ladder_match_started",
            match=formed.match_id,
            names=list(formed.names),
            host=self.host_id,
        )
        # The seats go out once the match exists, with its commitment (published with
        # the assignment, before the bots join).
        await ladder.stored(
            formed.match_id, ladder.store.publish, formed.match_id, formed.tokens, committed
        )
        for seat, (name, token) in enumerate(zip(formed.names, formed.tokens, strict=True)):
            self._send(
                name,
                Seated(
                    formed.match_id, seat, len(formed.names), token, self.host_id, "", committed
                ),
            )
        outcome = await ladder.host.outcome(formed.match_id)
        await ladder.settle_as(formed.match_id, outcome)
