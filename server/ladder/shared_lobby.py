"""The lobby of one ladder that many hosts share: a PostgreSQL database is its only
meeting place.

Several ``mammamia serve`` processes (hosts) on one PostgreSQL database run one ladder,
and the database is the only thing they share (no coordinator process). Each host's
:class:`SharedLobby` is its part of the one lobby (``server.ladder.lobby``):

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
  commitment are announced once the match exists: ``LadderStore.publish``). A bot is
  in one running match at a time across all hosts, because a pass sees the seats
  every earlier pass committed.
- **The forming host runs the match.** Its ladder plays the table: it creates the
  match with the recorded id and tokens, and the lobby publishes the seats and tells
  the bots whose streams it holds at once.
- **Every host announces to its own streams.** Each tick it reads the seats of its
  streams' bots in running matches (one statement) and sends each new one as an
  :class:`~server.ladder.lobby.Assignment` (through the one registry of
  entries, ``server.ladder.lobby.Entries``), naming the running host's advertised
  address when that is another host. A bot that enters again, through any host, in
  the middle of a match is sent its seat again.
- **Results and ratings** are written by the running host's ladder as on one host:
  the result once (a match that is not running is not finished again), the ratings in
  finish order exactly once (``LadderStore.apply_ratings``, under the same lock).

A host that dies: its bots' streams on it end (their bots enter again, anywhere);
its running matches stay recorded as running on it, and their bots stay seated,
until it restarts and resumes them from its journal (or marks the ones it cannot
resume aborted), or its lease lapses and another host takes them over
(``server.leases``): their seats then name that host's address, and each bot is
told its seat again. Nothing the other hosts do depends on it.

Times are the injected clock's (``Ladder.clock``, given to the lobby); the hosts'
clocks must agree to well within ``stale`` (NTP does).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Collection, Sequence

import structlog

from server.db.ladder.reads import LadderReader
from server.db.ladder.rows import Seated
from server.db.ladder.store import LadderStore
from server.db.writer import Writer
from server.tokens import new_match_id, new_token

from .discipline import RESTING, refusal
from .lobby import Assignment, Entrant, Entries, Play, StartedMatch, Table, new_stream
from .ratings import Rating
from .scheduler import Policy, Waiting, form_matches
from .settling import Settling

log = structlog.get_logger()

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


class SharedLobby:
    """This host's part of the lobby that many hosts share (see the module)."""

    alone = False

    def __init__(
        self,
        store: LadderStore,
        reader: LadderReader,
        writer: Writer,
        settling: Settling,
        policy: Policy,
        host_id: str,
        advertise: Callable[[], str],
        clock: Callable[[], float],
        *,
        tick: float = DEFAULT_TICK_S,
        beat: float = DEFAULT_BEAT_S,
        stale: float = DEFAULT_STALE_S,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.writer = writer
        self.settling = settling
        self.reader = reader
        self.policy = policy
        self.host_id = host_id
        self.advertise = advertise
        self.clock = clock
        self.tick = tick
        self.beat = beat
        self.stale = stale
        self._rng = rng or random.Random()
        self.entries = Entries()
        self._playing: set[asyncio.Future[None]] = set()  # the tables formed here
        self._held = False  # see hold
        #: The server's default quota of matches per bot and hour (0: none).
        self.per_hour = 0

    def recover(self) -> list[str]:
        """Removes this host's entries (its streams ended with its last run), takes the
        running matches recorded before hosts were named; returns the matches running
        on this host (the other hosts settle theirs). For start-up, on the calling
        thread."""
        cleared = self.store.clear_entries(self.host_id)
        adopted = self.store.adopt(self.host_id)
        if cleared or adopted:
            log.info("ladder_host_recovered", host=self.host_id, entries=cleared, adopted=adopted)
        return self.store.running(host=self.host_id)

    async def enter(self, name: str) -> Entrant:
        """Returns the bot's entrant through this host, its row written (see
        :class:`~server.ladder.lobby.Lobby`)."""
        stream = new_stream()
        try:
            await self.writer.run(self.store.enter, name, self.host_id, stream, self.clock())
        except BaseException:
            # (Cancelled while the row was written: it goes again, after it.)
            self.writer.send(self.store.leave, name, stream)
            raise

        def leave() -> None:
            if self.entries.close(name, stream):
                self.writer.send(self.store.leave, name, stream)
            log.info("ladder_bot_left", bot=name)

        # A seat held is told again on this stream (the next announcement).
        entrant = self.entries.open(name, stream, leave)
        log.info("ladder_bot_entered", bot=name, host=self.host_id)
        return entrant

    def has_entered(self, name: str) -> bool:
        """Returns whether ``name`` has an Enter stream open on this host."""
        return name in self.entries

    async def run(self, play: Play) -> None:
        """Beats, announces and schedules every tick until cancelled; then ends every
        Enter stream on this host."""
        last_beat = -float("inf")
        failing = False
        logged = -float("inf")
        try:
            while True:
                now = self.clock()
                if now - last_beat >= self.beat:
                    self.writer.send(self._beat, list(self.entries.streams().values()), now)
                    last_beat = now
                try:
                    await self.announce()
                    await self.schedule(now, play)
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
            self.entries.end()

    def _beat(self, streams: list[str], now: float) -> None:
        """Keeps this host's claim on the ladder (its presence, which other hosts'
        passes read) and marks its streams' entries alive. On the writer thread."""
        if self.store.keep_claim():
            log.info("ladder_claim_taken_again", host=self.host_id)
        self.store.beat(self.host_id, streams, now)

    async def announce(self) -> None:
        """Tells each bot with a stream here its seat in a running match, once per
        stream, and ends the streams that a newer entry elsewhere replaced."""
        # The streams as they were when the read began: a stream opened during the read
        # (its row written before it counts here) waits for the next tick.
        read = self.entries.streams()
        if not read:
            return
        seats, entries, suspended, spent = await self.reader.streams(
            list(read), self.clock(), self.per_hour
        )
        self.rest(spent, RESTING)
        for name, stream in read.items():
            if self.entries.stream_of(name) != stream:
                continue
            if name in suspended:  # suspended through any host: its stream ends here
                self.suspend(name, refusal(name, suspended[name]))
                continue
            entry = entries.get(name)
            if entry is not None and entry[1] != stream:
                self.entries.replace(name)
                continue
            seat = seats.get(name)
            if seat is not None:
                self.entries.tell(name, self._assignment(seat))

    def _assignment(self, seat: Seated) -> Assignment:
        """Returns a seat read from the database as its bot is told it: naming the
        address of the host that runs the match when that is another host."""
        return Assignment(
            seat.match_id,
            seat.token,
            seat.seat,
            seat.players,
            seat.commitment,
            host_address="" if seat.host == self.host_id else seat.address,
        )

    async def schedule(self, now: float, play: Play) -> None:
        """Runs one scheduling pass when this host has a free match slot, and starts
        ``play`` on the table it formed (if any)."""
        if self._held or len(self._playing) >= self.policy.concurrency:
            return
        # A task the drain awaits, shielded: a pass committed on the writer thread is
        # followed through (its matches played, or marked aborted) even when the
        # server drains meanwhile, so that no match is left recorded as running.
        await asyncio.shield(self.settling.start(self._pass(now, play)))

    async def _pass(self, now: float, play: Play) -> None:
        formed = await self.writer.run(
            self.store.take,
            self.host_id,
            self.advertise(),
            now - self.stale,
            self._form,
            reserve,
            now=now,
            per_hour=self.per_hour,
        )
        for match in formed:
            task = self.settling.start(play(Table(match.names, match.match_id, match.tokens)))
            self._playing.add(task)
            task.add_done_callback(self._playing.discard)

    def _form(self, waiting: list[tuple[str, Rating, int, int]]) -> list[tuple[str, ...]]:
        """Returns at most one match of the waiting bots (on the writer thread, inside
        the pass's transaction): one per pass lets every host with a free slot take
        its turn."""
        return form_matches(
            [Waiting(name, rating.mu, games, league) for name, rating, games, league in waiting],
            self.policy,
            self.policy.concurrency - 1,
            self._rng,
        )

    async def seat(self, match: StartedMatch) -> None:
        """Publishes the match's seats (tokens and commitment), then tells the bots
        whose streams are here; the other hosts tell theirs at their next tick."""
        await self.settling.stored(
            match.match_id, self.store.publish, match.match_id, match.commitment
        )
        for seat, name in enumerate(match.names):
            self.entries.tell(name, match.assignment(seat))

    def unseat(self, match: StartedMatch) -> None:
        """Nothing to forget here: a match's seats end with its row (its result)."""

    def hold(self, held: bool) -> None:
        """Runs no scheduling pass while ``held`` (see :class:`Lobby`)."""
        self._held = held

    def suspend(self, name: str, why: str) -> None:
        """Ends the bot's stream here, its entry row removed (see :class:`Lobby`)."""
        stream = self.entries.end_one(name, why)
        if stream is not None:
            self.writer.send(self.store.leave, name, stream)

    def wake(self) -> None:
        """Nothing to do: every tick looks for tables (see :class:`Lobby`)."""

    def rest(self, names: Collection[str], why: str) -> None:
        """Tells the bots why they wait (see :class:`Lobby`)."""
        self.entries.rest(names, why)

    async def release(self, table: Table) -> None:
        """Marks the table's match, recorded by the pass, aborted: its bots wait again."""
        if table.match_id is not None:
            await self.settling.stored(table.match_id, self.store.abort_match, table.match_id)
