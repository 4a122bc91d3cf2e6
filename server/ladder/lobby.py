"""The lobby: where entered bots wait, are seated together, and are told their seats.

The ladder (``server.ladder.ladder``) registers bots, plays the matches its lobby
forms, and settles and rates them; it talks to its lobby through :class:`Lobby`
only. A lobby holds the bots' entries (:class:`Entries`, one registry: one
:class:`Entrant` per bot, each told a match's seat once), forms tables of the bots
waiting and hands each to the ladder to play, and announces the seats of each match
the ladder starts. Two lobbies:

- :class:`LocalLobby`, this process's alone (an SQLite file; or a ladder of duplicate
  sets, which is one host's alone on PostgreSQL too): its bots wait in memory, and
  the scheduler's loop (``server.ladder.scheduler``) seats them;
- :class:`~server.ladder.shared_lobby.SharedLobby`, one lobby of many hosts that share
  a PostgreSQL database: entries are rows, tables are formed by a transaction,
  each host announces to the bots whose streams it holds.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Collection, Coroutine
from dataclasses import dataclass
from typing import Protocol

import structlog

from mammamia.fairness import DealSet
from server.db.ladder.rows import LadderError
from server.db.ladder.store import LadderStore
from server.db.writer import Writer
from server.quoting import quoted

from .ratings import initial
from .scheduler import Policy, Scheduler, Waiting

log = structlog.get_logger()


class ReplacedError(LadderError):
    """The bot entered again on another stream, which takes over from this one."""


class EndedError(LadderError):
    """The bot's entry was ended by the ladder (it was suspended: the message says why)."""


@dataclass(frozen=True, slots=True)
class Assignment:
    """A seat the lobby gives a bot: play it with the Seat service and this token, on
    the host at ``host_address`` (empty: the host the bot entered through)."""

    match_id: str
    seat_token: str
    seat: int
    players: int
    commitment: str = ""  # the match's commitment to its seed (a set's)
    set_id: str | None = None  # the duplicate set it belongs to, if any
    set_index: int = 0  # its place in the set (= the seats' rotation)
    host_address: str = ""


@dataclass(frozen=True, slots=True)
class Notice:
    """What the lobby tells a bot that is no seat: why it waits (the ladder is
    paused), or that it no longer does."""

    text: str


#: Put on an entrant's queue to end it because a newer entry of the same bot took over.
REPLACED = "replaced"

#: An entrant's queue: its assignments and notices, REPLACED, an EndedError that
#: ends it, or None when the ladder stops.
EntrantQueue = asyncio.Queue[Assignment | Notice | str | EndedError | None]


@dataclass(frozen=True, slots=True)
class Table:
    """Bots the lobby seated together, in seat order; a shared lobby records their
    match before it exists, with its id and seat tokens (else both None)."""

    names: tuple[str, ...]
    match_id: str | None = None
    tokens: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class StartedMatch:
    """A ladder match the server has created: its bots and their seat tokens in seat
    order, its commitment to its seed, and its place in a duplicate set (if any)."""

    match_id: str
    names: tuple[str, ...]
    tokens: tuple[str, ...]
    commitment: str = ""
    place: DealSet | None = None

    def assignment(self, seat: int) -> Assignment:
        """Returns the seat ``seat`` as its bot is told it."""
        place = self.place
        return Assignment(
            self.match_id,
            self.tokens[seat],
            seat,
            len(self.names),
            self.commitment,
            place.set_id if place else None,
            place.index if place else 0,
        )


class NotFreeError(LadderError):
    """Bots asked for by name that have no Enter stream open here, or are in a match."""


class Loan:
    """Entered bots a lobby took out of its tables for one unrated match of their own
    (a person's game in the web page, a scrimmage): each is told its seat through its
    ordinary entry (:meth:`seat`), as a ladder match's bots are, and waits again once
    the loan ends (:meth:`end`, the borrower's part when the match has ended)."""

    def __init__(self, lobby: LocalLobby, names: tuple[str, ...]) -> None:
        self.names = names
        self._lobby: LocalLobby | None = lobby
        self._told: list[str] = []

    def seat(self, match: StartedMatch, seats: dict[str, int]) -> None:
        """Tells each lent bot its seat of ``match`` (``seats``: bot -> seat); a bot
        whose stream closed meanwhile is told when it enters again, as a ladder
        match's bot is, until the loan ends."""
        lobby = self._lobby
        if lobby is None:
            return
        for name in self.names:
            assignment = match.assignment(seats[name])
            lobby._seated[name] = assignment
            self._told.append(name)
            lobby.entries.tell(name, assignment)

    def end(self) -> None:
        """Forgets the seats told and lets the bots wait again (once; later calls do
        nothing)."""
        lobby, self._lobby = self._lobby, None
        if lobby is None:
            return
        for name in self._told:
            lobby._seated.pop(name, None)
        lobby.scheduler.give_back(self.names)


#: Plays a table the lobby formed, to its stored result (the ladder's part).
Play = Callable[[Table], Coroutine[object, object, None]]


class Entrant:
    """A bot's entry, already recorded: its assignments, as an async iterator, until
    the ladder stops. Iterating raises ReplacedError when a newer entry of the bot
    took over. ``close`` ends the entry (the caller's part when its stream ends)."""

    def __init__(self, name: str, queue: EntrantQueue, leave: Callable[[], None]) -> None:
        self.name = name
        self._queue = queue
        self._leave: Callable[[], None] | None = leave

    def __aiter__(self) -> Entrant:
        return self

    async def __anext__(self) -> Assignment | Notice:
        """Returns the next assignment or notice; raises StopAsyncIteration once the
        ladder has stopped, ReplacedError once a newer entry took over, EndedError
        once the bot was suspended."""
        item = await self._queue.get()
        if item is None:
            self._queue.put_nowait(None)  # stays ended
            raise StopAsyncIteration
        if isinstance(item, Assignment | Notice):
            return item
        self._queue.put_nowait(item)
        if isinstance(item, EndedError):
            raise item
        raise ReplacedError(
            f"bot {quoted(self.name)} entered the ladder again elsewhere; the newer entry plays"
        )

    def notify(self, text: str) -> None:
        """Tells this entry's bot ``text`` (a :class:`Notice`)."""
        self._queue.put_nowait(Notice(text))

    def close(self) -> None:
        """Ends the entry (once; later calls do nothing)."""
        leave, self._leave = self._leave, None
        if leave is not None:
            leave()


def new_stream() -> str:
    """Returns a new id for an Enter stream."""
    return secrets.token_hex(8)


class Entries:
    """The bots with an Enter stream open on this host: one stream each (a newer one
    replaces the older), each told the seat of a match once."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[str, EntrantQueue]] = {}  # bot -> (stream id, queue)
        # bot -> the match (and its host's address) last told on its stream: a match
        # taken over by another host is told again, with the new address.
        self._told: dict[str, tuple[str, str]] = {}
        # The bots told they wait out their quota of matches (``rest``).
        self._resting: set[str] = set()

    def open(self, name: str, stream: str, leave: Callable[[], None]) -> Entrant:
        """Returns the entrant of a new stream ``stream`` (its id: :func:`new_stream`)
        of ``name``, which ends the bot's older stream here as replaced; ``leave`` is
        called when the entrant is closed."""
        queue: EntrantQueue = asyncio.Queue()
        self.replace(name)
        self._resting.discard(name)  # a new stream is told why it waits, again
        self._open[name] = (stream, queue)
        return Entrant(name, queue, leave)

    def close(self, name: str, stream: str) -> bool:
        """Forgets the stream ``stream`` of ``name``; returns False (changing nothing)
        when it is not the bot's stream here any more."""
        current = self._open.get(name)
        if current is None or current[0] != stream:
            return False
        del self._open[name]
        self._told.pop(name, None)
        return True

    def replace(self, name: str) -> None:
        """Ends the bot's stream here (if any) as replaced by a newer entry."""
        current = self._open.pop(name, None)
        self._told.pop(name, None)
        if current is not None:
            current[1].put_nowait(REPLACED)

    def end_one(self, name: str, why: str) -> str | None:
        """Ends the bot's stream here (if any) with EndedError(``why``); returns its
        stream id, or None when it had none here."""
        current = self._open.pop(name, None)
        self._told.pop(name, None)
        if current is None:
            return None
        current[1].put_nowait(EndedError(why))
        return current[0]

    def streams(self) -> dict[str, str]:
        """Returns the stream id of each bot with a stream here."""
        return {name: stream for name, (stream, _) in self._open.items()}

    def stream_of(self, name: str) -> str | None:
        """Returns the id of the bot's stream here, or None."""
        current = self._open.get(name)
        return None if current is None else current[0]

    def __contains__(self, name: object) -> bool:
        return name in self._open

    def tell(self, name: str, assignment: Assignment) -> None:
        """Sends ``assignment`` on the bot's stream here, unless there is none or it
        was told that match on that host already."""
        current = self._open.get(name)
        told = (assignment.match_id, assignment.host_address)
        if current is None or self._told.get(name) == told:
            return
        self._told[name] = told
        current[1].put_nowait(assignment)

    def rest(self, resting: Collection[str], why: str) -> None:
        """Tells each bot of ``resting`` with a stream here ``why`` it waits (a
        :class:`Notice`), once while it rests: the bots checked and not resting are
        told again when they next rest."""
        for name in resting:
            current = self._open.get(name)
            if current is not None and name not in self._resting:
                current[1].put_nowait(Notice(why))
        self._resting = {n for n in resting if n in self._open}

    def notify(self, text: str) -> None:
        """Tells every bot with a stream here ``text`` (a :class:`Notice`)."""
        for _, queue in self._open.values():
            queue.put_nowait(Notice(text))

    def end(self) -> None:
        """Ends every stream here (the ladder has stopped)."""
        for _, queue in self._open.values():
            queue.put_nowait(None)


class Lobby(Protocol):
    """Where the ladder's bots wait and are seated (see the module)."""

    #: Whether this host alone rates the ladder's results: standings read after a
    #: result stay true until it rates the next.
    alone: bool
    #: The bots with an Enter stream open on this host.
    entries: Entries

    def recover(self) -> list[str]:
        """Returns the matches recorded as running that this host settles after a
        restart, once the lobby has cleared what its last run left. For start-up, on
        the calling thread."""
        ...

    async def enter(self, name: str) -> Entrant:
        """Returns the entrant of a bot whose key was checked, its entry recorded."""
        ...

    def has_entered(self, name: str) -> bool:
        """Returns whether ``name`` has an Enter stream open on this host."""
        ...

    async def run(self, play: Play) -> None:
        """Seats waiting bots together and starts ``play`` on each table, until
        cancelled; then ends every entrant."""
        ...

    async def seat(self, match: StartedMatch) -> None:
        """Records the started match's seats and tells its bots (those whose streams
        are elsewhere, or not open now, are told when they are)."""
        ...

    def unseat(self, match: StartedMatch) -> None:
        """Forgets the seats of a match that has ended (before its result is stored)."""
        ...

    async def release(self, table: Table) -> None:
        """Lets the bots of a table whose match could not be created wait again."""
        ...

    def hold(self, held: bool) -> None:
        """Forms no table while ``held`` (a competition's freeze and finals: the
        matches its finals seat through :meth:`seat` still are)."""
        ...

    def suspend(self, name: str, why: str) -> None:
        """Ends the bot's Enter stream on this host, if any, with ``why`` (other hosts
        end theirs when they read the suspension)."""
        ...

    def rest(self, names: Collection[str], why: str) -> None:
        """Tells those of ``names`` with a stream here why they wait, once."""
        ...

    def wake(self) -> None:
        """Looks again soon for tables to form (a quota changed, an hour passed)."""
        ...


class LocalLobby:
    """The lobby of a ladder this process runs alone (see the module)."""

    alone = True

    def __init__(
        self, store: LadderStore, writer: Writer, policy: Policy, *, settle: float = 0.25
    ) -> None:
        self.store = store
        self.writer = writer
        self.entries = Entries()
        self.scheduler = Scheduler(policy, self._waiting, settle=settle)
        self._seated: dict[str, Assignment] = {}
        #: Returns those of the names given not to seat now (the ladder's discipline).
        self.bench: Callable[[list[str]], set[str]] = lambda names: set()
        #: The leagues' bosses, waiting whenever in no match (``join_bosses``).
        self.bosses: set[str] = set()

    def join_bosses(self, names: Collection[str]) -> None:
        """Makes the leagues' bosses wait for matches for as long as the lobby runs
        (the ladder plays their seats itself); no quota of the hour benches them."""
        for name in names:
            if name not in self.bosses:
                self.bosses.add(name)
                self.scheduler.join(name)

    def recover(self) -> list[str]:
        """Returns every match recorded as running: all were this process's."""
        return self.store.running()

    async def enter(self, name: str) -> Entrant:
        """Returns the bot's entrant, waiting from now on (see :class:`Lobby`)."""

        stream = new_stream()

        def leave() -> None:
            self.entries.close(name, stream)
            self.scheduler.leave(name)
            log.info("ladder_bot_left", bot=name)

        entrant = self.entries.open(name, stream, leave)
        seat = self._seated.get(name)
        if seat is not None:
            # Back in the middle of a match (a lost connection): the seat is still its own.
            self.entries.tell(name, seat)
        self.scheduler.join(name)
        log.info("ladder_bot_entered", bot=name)
        return entrant

    def has_entered(self, name: str) -> bool:
        """Returns whether ``name`` has an Enter stream open (busy in a match or not)."""
        return self.scheduler.is_joined(name)

    async def run(self, play: Play) -> None:
        """Runs the scheduler's loop with ``play``; then ends every entrant."""
        try:
            await self.scheduler.run(lambda names: play(Table(names)))
        finally:
            self.entries.end()

    async def seat(self, match: StartedMatch) -> None:
        """Records the match as running, then tells its bots their seats."""
        place = match.place
        await self.writer.run(
            self.store.start_match,
            match.match_id,
            match.names,
            match.commitment,
            place.set_id if place else None,
            place.index if place else None,
        )
        for seat, name in enumerate(match.names):
            assignment = match.assignment(seat)
            self._seated[name] = assignment
            # A bot gone since it was seated is played by the server's default policy.
            self.entries.tell(name, assignment)

    def unseat(self, match: StartedMatch) -> None:
        """Forgets the match's seats."""
        for name in match.names:
            seat = self._seated.get(name)
            if seat is not None and seat.match_id == match.match_id:
                del self._seated[name]

    def lend(self, names: Collection[str]) -> Loan:
        """Returns the loan of the bots ``names`` (see :class:`Loan`), each entered
        here and in no match, taken out of the tables the scheduler forms until the
        loan ends. Raises NotFreeError naming those that are not, or that are the
        leagues' bosses (none is taken then)."""
        asked = tuple(dict.fromkeys(names))
        if bosses := [n for n in asked if n in self.bosses]:
            # The ladder plays a boss in its own matches (and scrimmages) only.
            raise NotFreeError(
                f"a league's boss plays only on the ladder: {', '.join(map(quoted, bosses))}"
            )
        seated = [n for n in asked if n in self._seated]
        missing = seated or self.scheduler.take(asked)
        if missing:
            absent = [n for n in missing if not self.scheduler.is_joined(n)]
            busy = [n for n in missing if n not in absent]
            why = []
            if absent:
                why.append(f"not entered in the ladder now: {', '.join(map(quoted, absent))}")
            if busy:
                why.append(f"playing a match now: {', '.join(map(quoted, busy))}")
            raise NotFreeError("; ".join(why))
        log.info("ladder_bots_lent", bots=list(asked))
        return Loan(self, asked)

    async def release(self, table: Table) -> None:
        """Nothing to undo: the scheduler lets the table's bots wait again once the
        ladder is done with it."""

    def hold(self, held: bool) -> None:
        """Holds the scheduler (see :class:`Lobby`)."""
        self.scheduler.hold(held)

    def suspend(self, name: str, why: str) -> None:
        """Ends the bot's stream (see :class:`Lobby`); closing it leaves the scheduler."""
        self.entries.end_one(name, why)

    def wake(self) -> None:
        """Wakes the scheduler (see :class:`Lobby`)."""
        self.scheduler.wake()

    def rest(self, names: Collection[str], why: str) -> None:
        """Tells the bots why they wait (see :class:`Lobby`)."""
        self.entries.rest(names, why)

    def _waiting(self, names: list[str]) -> list[Waiting]:
        # On the loop: a row per waiting bot, from the ratings and the tallies; a
        # suspended bot (until its stream has ended) or one out of matches for the
        # hour waits unseated.
        benched = self.bench(names) - self.bosses
        names = [n for n in names if n not in benched]
        known = self.store.waiting(names)
        league = self.store.league_places(names)  # (empty when leagues are off)
        fresh = (initial(), 0)
        return [
            Waiting(n, known.get(n, fresh)[0].mu, known.get(n, fresh)[1], league.get(n, 0))
            for n in names
        ]
