"""The running ladder: bots enter, are assigned seats, and their results are rated.

One :class:`Ladder` per server. Its life:

1. start-up (:meth:`Ladder.recover`): every ladder match the store still holds as
   running was cut off by a crash. If the server stored its end (the record is
   written before the result is announced), the result is taken from there;
   otherwise the match is marked aborted, unrated. Then any result not yet rated
   is rated, so nothing announced is lost and nothing is rated twice.
2. :meth:`Ladder.enter`: a bot with a valid key waits in the ladder's lobby
   (``server.ladder.lobby``: one host's, or one that many hosts share on PostgreSQL);
   the lobby seats waiting bots together; the ladder creates each table's match
   through the server's matches (:class:`~server.ladder.matches.Matches`), the lobby
   tells its bots their seats (:class:`~server.ladder.lobby.Assignment`), and
   the ladder awaits the match's end, stores it and rates it.
3. :meth:`Ladder.run` runs the lobby until cancelled (server shutdown).

With ``duplicate`` (``mammamia serve --ladder-duplicate``) the bots the lobby
seats together play a **duplicate set** instead of one match: one deal (one server
seed, committed to before the first match) once for every rotation of the seats,
one match after another, each rated as it ends. The records of the set's matches
but the last are sealed until the set ends (mammamia.fairness); then the ladder
completes them (:meth:`LadderStore.reveal_set`). A set is cut short when one of its
bots has left before its next match, a match of it is aborted, or the server stops
or restarts: the matches it finished count, the rest are never played, and its
records are completed at once. On PostgreSQL a ladder of duplicate sets is one
host's alone (``LadderStore.claim``): its lobby is a local one, as on an SQLite file.

While the server runs, the store's writes run on the ladder's writer thread, in
order, so the event loop never waits for the disk; the reads that return a lot
(standings, match lists) run on its reader thread (:attr:`Ladder.reader`), and the
few that stay on the loop read a row per bot at most (a key, the waiting bots'
ratings and games). The threads end with the process, after every write queued.
What a drain must see through (a match to its stored result) runs as
:class:`~server.ladder.settling.Settling` tasks, which the drain awaits and never
cancels.

Names that never enter expire: a bot registered more than ``name_expiry`` seconds
ago that never opened an Enter stream is removed (checked periodically through the
writer, on the injected ``clock``), and at most ``max_unentered`` such names are
registered at once (:class:`~server.db.ladder.rows.LadderFullError` beyond).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable, Collection, Sequence

import structlog

from mammamia.fairness import DealSet, commitment, new_server_seed
from server.db.connection import storable
from server.db.hosts import Taken
from server.db.ladder.reads import BEST
from server.db.ladder.rows import (
    ALL_PLAYERS,
    DEFAULT_VERSION,
    LadderError,
    Standing,
    check_version,
)
from server.db.ladder.store import LadderStore
from server.db.writer import Writer
from server.quoting import quoted
from server.runners import Runners
from server.status import MatchStatus

from .discipline import Bounds, Discipline
from .leagues import Bosses
from .lobby import Entrant, Loan, Lobby, LocalLobby, StartedMatch, Table
from .matches import LadderClosedError, MatchEnd, Matches
from .scheduler import Policy
from .settling import Settling
from .shared_lobby import SharedLobby

log = structlog.get_logger()

#: How long a registered name that never entered is kept (seconds; 0: for ever).
DEFAULT_NAME_EXPIRY_S = 24 * 60 * 60

#: How many registered names that never entered may be held at once.
DEFAULT_MAX_UNENTERED = 10_000

#: How often names are checked for expiry, at most (a tenth of the expiry if shorter).
EXPIRY_CHECK_S = 60.0

#: How often the lobby looks again for bots whose hour of matches has passed.
QUOTA_CHECK_S = 30.0


class UnknownBotError(LadderError):
    """A bot name that is not registered, or a key that is not its key."""


class RegistrationClosedError(LadderError):
    """Registration is closed (an operator's switch or a competition's phase; the
    message says why)."""


#: Returns why registration is closed now, or None while it is open.
RegistrationCheck = Callable[[], Awaitable[str | None]]


class Ladder:
    """Registrations, the matches of the lobby's tables, and their results rated."""

    def __init__(
        self,
        store: LadderStore,
        matches: Matches,
        policy: Policy,
        *,
        settle: float = 0.25,
        clock: Callable[[], float] = time.time,
        name_expiry: float = DEFAULT_NAME_EXPIRY_S,
        max_unentered: int = DEFAULT_MAX_UNENTERED,
        duplicate: bool = False,
        host_id: str = "",
        advertise: Callable[[], str] = str,
        bounds: Bounds | None = None,
        runners: Runners | None = None,
    ) -> None:
        self.store = store
        self.duplicate = duplicate
        self.matches = matches
        self.writer = Writer("ladder-writer")
        self.reader = store.reader()
        self.settling = Settling(self.writer)
        self.clock = clock
        self.name_expiry = name_expiry
        self.max_unentered = max_unentered
        #: What may close registration (an operator's switch, a competition's phase):
        #: :meth:`registration_closed` asks each, in order.
        self.registration_checks: list[RegistrationCheck] = []
        # Who holds the lobby (a competition's freeze, an operator's pause): it forms
        # no table while any does.
        self._holds: set[str] = set()
        #: Why the entered bots wait (the ladder is paused), told to each bot that
        #: enters; None when nothing holds them but the want of other bots.
        self.waiting: str | None = None
        # The standings last read per scope, with the count of results rated when the
        # read began: standings change only when a result is rated.
        self._rated = 0
        self._standings: dict[tuple[int, str], tuple[int, tuple[int, list[Standing]]]] = {}
        #: On a database that other hosts may share (PostgreSQL), this host's part of
        #: the one lobby they run; else (an SQLite file, or duplicate sets, which are
        #: one host's alone: ``LadderStore.claim``) a lobby of this process alone.
        self.lobby: Lobby = (
            SharedLobby(
                store, self.reader, self.writer, self.settling, policy, host_id, advertise, clock
            )
            if store.shared and not duplicate
            else LocalLobby(store, self.writer, policy, settle=settle)
        )
        #: The host whose ladder matches this ladder ends, on a shared database: a
        #: match taken over by another host (``server.leases``) is that host's to end.
        self._host = host_id if isinstance(self.lobby, SharedLobby) else None
        #: Suspensions, voids, aborts, quotas and quarantine (``server.ladder.discipline``).
        bounds = bounds or Bounds()
        self.discipline = Discipline(self, bounds, runners, clock)
        if isinstance(self.lobby, SharedLobby):
            self.lobby.per_hour = bounds.matches_per_hour
        else:
            self.lobby.bench = self.discipline.benched
        #: With leagues on, who plays the bosses' seats (:meth:`play_bosses`).
        self.bosses: Bosses | None = None

    def play_bosses(self, bosses: Bosses) -> None:
        """Turns leagues on (``server.ladder.leagues``, stored already): the bosses
        wait for matches whenever in none, and this host plays their seats in the
        matches it runs."""
        self.bosses = bosses
        if isinstance(self.lobby, LocalLobby):
            self.lobby.join_bosses(bosses.names)

    @property
    def held(self) -> bool:
        """Whether anyone holds the lobby now (an operator's pause, a competition's
        freeze or finals)."""
        return bool(self._holds)

    @property
    def closed(self) -> bool:
        """Whether the ladder has stopped (the server is shutting down)."""
        return self.settling.stopped

    def recover(self, resumed: Collection[str] = ()) -> None:
        """Settles the matches a crash cut off, then rates every unrated result.
        ``resumed`` are the matches the server resumed from its journal: they are
        awaited and rated when they end, as if no crash had happened.

        A duplicate set a crash cut off is cut short: its finished matches count, and
        its records are completed once its last match still going (resumed) has ended.

        On a shared database, only the matches this host ran are settled (the other
        hosts run theirs).

        For start-up, before the server serves: it writes on the calling thread."""
        resuming: dict[str, asyncio.Future[None]] = {}
        scrimmages = set(self.store.running_scrimmage_matches())
        for match_id in self.lobby.recover():
            if match_id in scrimmages:
                self._recover_scrimmage(match_id, match_id in resumed)
                continue
            end = self.matches.stored_result(match_id)
            if end is not None and end.status == MatchStatus.FINISHED:
                if self._store_result(match_id, end):
                    self._log_finished(match_id, end)
                log.info("ladder_match_recovered", match=match_id)
            elif match_id in resumed:
                if self._host is not None:
                    # Announced again: the host may have stopped before it announced
                    # the seats of the match it had created.
                    self.store.publish(match_id, self.matches.commitment(match_id))
                resuming[match_id] = self.settling.start(self._settle_resumed(match_id))
                log.info("ladder_match_resumed", match=match_id)
            else:
                self.store.abort_match(match_id, self._host)
                log.info("ladder_match_aborted", match=match_id, reason="server restarted")
        for set_id in self.store.playing_sets():
            row = self.store.deal_set(set_id)
            going = [resuming[m] for m in (row.matches if row else ()) if m in resuming]
            if going:
                self.settling.start(self._end_set(set_id, "the server restarted", going))
            elif status := self.store.reveal_set(set_id, "the server restarted"):
                log.info(
                    "ladder_set_ended", set=set_id, status=status, reason="the server restarted"
                )
        for scrimmage in self.store.stop_scrimmages("the server restarted", self.clock()):
            log.info("scrimmage_ended", scrimmage=scrimmage, reason="the server restarted")
        rated = self.store.apply_ratings()
        if rated:
            log.info("ladder_ratings_applied", matches=rated)

    def _recover_scrimmage(self, match_id: str, resumed: bool) -> None:
        """Keeps how a scrimmage match a restart cut off ended (never rated): as
        stored, else aborted; one resumed from the journal is kept when it ends."""
        if resumed:
            self.settling.start(self._settle_scrimmage(match_id))
            return
        end = self.matches.stored_result(match_id)
        if end is None or end.status != MatchStatus.FINISHED:
            end = MatchEnd(MatchStatus.ABORTED)
        self.store.end_scrimmage_match(match_id, end.status, end.ranks, end.delivered)

    async def _settle_scrimmage(self, match_id: str) -> None:
        if self.bosses is not None:
            self.bosses.resume(match_id)  # a boss opponent plays on, as in a ladder match
        end = await self.matches.result(match_id)
        await self.settling.stored(
            match_id, self.store.end_scrimmage_match, match_id, end.status, end.ranks, end.delivered
        )
        await self.writer.run(self.store.reveal_scrimmage, [match_id])

    async def take_over(self, taken: Taken, resumed: Collection[str]) -> None:
        """Settles the ladder matches this host took over from a host whose lease
        lapsed (``server.leases``), as :meth:`recover` settles its own after a
        restart: a match whose end was stored is rated from it; one resumed is
        announced again (its seats now name this host's address, and each bot is told
        where to play) and rated when it ends; any other is marked aborted."""
        for match_id in taken.ladder:
            end = self.matches.stored_result(match_id)
            if end is not None and end.status == MatchStatus.FINISHED:
                if await self.settling.stored(match_id, self._store_result, match_id, end):
                    self._log_finished(match_id, end)
                log.info("ladder_match_recovered", match=match_id, host=taken.host)
            elif match_id in resumed:
                commitment = self.matches.commitment(match_id)
                await self.settling.stored(match_id, self.store.publish, match_id, commitment)
                self.settling.start(self._settle_resumed(match_id))
                log.info("ladder_match_taken_over", match=match_id, host=taken.host)
            else:
                await self.settling.stored(match_id, self.store.abort_match, match_id, self._host)
                log.info("ladder_match_aborted", match=match_id, reason="its host went away")

    async def run(self) -> None:
        """Runs the lobby, playing the tables it forms, and expires names that never
        entered, until cancelled; the lobby then ends every Enter stream."""
        expiring = asyncio.create_task(self._expire_periodically(), name="ladder-expiry")
        waking = asyncio.create_task(self._wake_periodically(), name="ladder-wake")
        benching = asyncio.create_task(self._obey_periodically(), name="ladder-obey")
        try:
            await self.lobby.run(self._play)
        finally:
            self.settling.stopped = True
            for task in (expiring, waking, benching):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def register(self, name: str) -> str:
        """Returns the new bot's secret key; raises RegistrationClosedError,
        NameTakenError, LadderFullError (too many names that never entered) or
        LadderError."""
        closed = await self.registration_closed()
        if closed is not None:
            raise RegistrationClosedError(closed)
        key = await self.writer.run(
            self.store.register, name, now=self.clock(), max_unentered=self.max_unentered
        )
        log.info("ladder_bot_registered", bot=name)
        return key

    async def enter(self, name: str, key: str, version: str = DEFAULT_VERSION) -> Entrant:
        """Returns the bot's entrant, recorded before this returns: its assignments,
        for as long as the caller listens, until the caller closes it. The bot enters
        as ``version`` of its name: the seats it is handed from then on are that
        version's, rated apart from its other versions (docs/ladder.md, "Versions").

        Raises UnknownBotError for an unknown name or a wrong key, SuspendedError for
        a suspended bot, QuotaError once it has used its entries of the hour,
        LadderClosedError once the ladder has stopped (all at once, before any
        assignment). The entrant raises EndedError when the bot is suspended, and
        raises ReplacedError when a newer entry of the same bot takes over (a
        reconnect, or a second copy of the bot: only one plays); the ladder stopping
        ends it without error. Raises LadderError for a version that is not up to 32
        of [A-Za-z0-9._+-]. A bot's first entry is recorded (through the writer,
        so that it and the expiry of the name are ordered): from then on the name
        never expires.
        """
        if self.closed:
            raise LadderClosedError("the ladder has stopped: the server is shutting down")
        check_version(version)
        if not storable(name) or not self.store.check_key(name, key):
            raise UnknownBotError(f"bot {quoted(name)} is not registered or the key is wrong")
        if self.store.entered(name) is None and not await self.writer.run(
            self.store.mark_entered, name, key, self.clock()
        ):
            raise UnknownBotError(
                f"bot {quoted(name)} is not registered (it never entered and "
                "its name expired): register it again"
            )
        await self.discipline.admit(name)
        if self.store.version(name) != version:
            await self.writer.run(self.store.enter_version, name, version)
        entrant = await self.lobby.enter(name)
        if self.waiting is not None:
            entrant.notify(self.waiting)
        return entrant

    def lend(self, names: Collection[str]) -> Loan:
        """Returns the loan of the entered bots ``names`` for one unrated match that is
        not the ladder's (a person's game, a scrimmage): taken out of the lobby's
        tables, told their seats through their entries (``Loan.seat``), waiting again
        once the loan ends (``Loan.end``); never rated on the ladder. Raises
        NotFreeError naming those not entered or in a match, LadderClosedError once
        the ladder has stopped, and LadderError while the lobby is held (an operator's
        pause, a competition's freeze or finals: its bots play nothing else then) or
        on a ladder whose lobby many hosts share (its bots are seated through the
        database alone)."""
        if self.closed:
            raise LadderClosedError("the ladder has stopped: the server is shutting down")
        if self._holds:
            raise LadderError(
                "the ladder is paused (by an operator, or for a competition's freeze "
                "or finals): its bots play no other match now"
            )
        if not isinstance(self.lobby, LocalLobby):
            raise LadderError(
                "the ladder's bots cannot be asked for by name on a ladder that many hosts share"
            )
        return self.lobby.lend(names)

    async def registration_closed(self) -> str | None:
        """Returns why registration is closed now (the first of
        :attr:`registration_checks` to say so), or None while it is open: the one
        check Register goes through."""
        for check in self.registration_checks:
            closed = await check()
            if closed is not None:
                return closed
        return None

    async def standings(
        self, players: int = ALL_PLAYERS, by: str = BEST
    ) -> tuple[int, list[Standing]]:
        """Returns (rated matches, standings best first) of all matches or of one
        player count, each bot by its best or newest version (``by``, see
        ``LadderReads.standings``): read on the reader thread once after each rated
        result, and from memory until the next."""
        if not self.lobby.alone:
            # Other hosts rate results too: every reading is read afresh.
            return await self.reader.standings(players, by)
        rated = self._rated
        known = self._standings.get((players, by))
        if known is not None and known[0] == rated:
            return known[1]
        standings = await self.reader.standings(players, by)
        if self._rated == rated:  # no result rated meanwhile: good until the next
            self._standings[(players, by)] = (rated, standings)
        return standings

    def hold(self, held: bool, by: str = "competition") -> None:
        """Forms no ladder table while ``held`` by ``by`` or by anyone else (a
        competition's freeze and finals, an operator's pause); the matches under way
        go on."""
        if held:
            self._holds.add(by)
        else:
            self._holds.discard(by)
        self.lobby.hold(bool(self._holds))

    def notify(self, waiting: str | None, told: str) -> None:
        """Sets why the entered bots wait (None: nothing but the want of other bots)
        and tells ``told`` to every bot with an Enter stream on this host."""
        self.waiting = waiting
        self.lobby.entries.notify(told)

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

    def changed(self) -> None:
        """Marks the standings read so far stale (a result rated, a match voided, a
        bot suspended or reinstated)."""
        self._rated += 1

    async def _obey_periodically(self) -> None:
        # On a shared database an operator may suspend a bot, or abort a match,
        # through another host while this host runs the match: done here within a beat.
        if not isinstance(self.lobby, SharedLobby):
            return
        while True:
            await asyncio.sleep(self.lobby.beat)
            try:
                await self.discipline.obey()
            except Exception:
                log.exception("ladder_obey_failed")

    async def _wake_periodically(self) -> None:
        # A bot out of matches for its hour waits with nothing to wake the lobby when
        # the hour has passed: look again now and then.
        while True:
            await asyncio.sleep(QUOTA_CHECK_S)
            self.lobby.wake()

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

    async def _play(self, table: Table) -> None:
        """Plays a table the lobby formed: one match, or a duplicate set."""
        if self.duplicate:
            await self._play_set(table.names)
        else:
            # Shielded: when the ladder stops (the server drains), the match still
            # ends and its result is stored.
            await asyncio.shield(self.settling.start(self._play_match(table)))

    async def _play_set(self, names: tuple[str, ...]) -> None:
        """Plays one deal once for every rotation of ``names``' seats, match after match,
        until the set is complete or cut short; then reveals its seed in its records."""
        n = len(names)
        set_id = f"set-{secrets.token_hex(8)}"
        server_seed = new_server_seed()
        committed = commitment(set_id, server_seed)
        reason = "the server stopped"
        going: list[asyncio.Future[MatchEnd | None]] = []
        try:
            # The set's row first: its commitment is published with its first match.
            # (Inside the try: a drain that cancels the set while the row is written
            # still ends it, after the row, as the writer runs in order.)
            await self.writer.run(self.store.start_set, set_id, names, server_seed, committed)
            log.info("ladder_set_started", set=set_id, names=list(names), commitment=committed)
            for index in range(n):
                gone = [b for b in names if not self.lobby.has_entered(b)]
                if index and gone:
                    reason = f"{', '.join(gone)} left the ladder"
                    break
                # Match ``index``: the bot at seat s of the first match sits at s + index.
                seated = tuple(names[(seat - index) % n] for seat in range(n))
                playing = self.settling.start(
                    self._play_match(Table(seated), (DealSet(set_id, index, n), server_seed))
                )
                going.append(playing)
                # Shielded: when the ladder stops, the match still ends and is stored.
                end = await asyncio.shield(playing)
                if end is None:
                    break
                if end.status != MatchStatus.FINISHED:
                    reason = "a match of the set was aborted"
                    break
        except BaseException:
            # Cancelled (the server drains) or failed: the set still ends, once its
            # match under way has (the drain awaits it, after the matches' grace).
            self.settling.start(self._end_set(set_id, reason, going))
            raise
        await self._end_set(set_id, reason, going)

    async def _end_set(self, set_id: str, reason: str, going: Sequence[Awaitable[object]]) -> None:
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
        self, table: Table, deal_set: tuple[DealSet, str] | None = None
    ) -> MatchEnd | None:
        """Returns how the table's match ended, once stored and rated (None when it
        could not be created: the ladder has stopped, or the server failed)."""
        try:
            match_id, tokens, committed = await self.matches.create(
                table.names, deal_set, match_id=table.match_id, tokens=table.tokens
            )
        except Exception as e:  # LadderClosedError (a drain) or a failure
            log.warning("ladder_match_not_created", match=table.match_id, error=repr(e))
            await self.lobby.release(table)
            return None
        if self.bosses is not None:
            self.bosses.play(table.names, tokens)
        match = StartedMatch(
            match_id,
            table.names,
            tuple(tokens),
            committed,
            deal_set[0] if deal_set is not None else None,
        )
        try:
            # The seats first: a bot told its seat finds its match in the ladder's lists.
            await self.lobby.seat(match)
            log.info("ladder_match_started", match=match_id, names=list(table.names))
            end = await self.matches.result(match_id)
        finally:
            self.lobby.unseat(match)
        await self._settle(match_id, end)
        return end

    async def settled(self) -> None:
        """Returns once every match the ladder started has its result stored (the
        server's drain awaits it after the matches have ended)."""
        await self.settling.settled()

    async def _settle_resumed(self, match_id: str) -> None:
        if self.bosses is not None:
            # A match resumed after a restart, or taken over: its bosses play on.
            self.bosses.resume(match_id)
        await self._settle(match_id, await self.matches.result(match_id))

    async def _settle(self, match_id: str, end: MatchEnd) -> None:
        """Stores and rates a finished match's result, or marks it aborted; a write
        that fails (the database away) is tried again until it is stored
        (:meth:`Settling.stored`)."""
        if end.status == MatchStatus.FINISHED:
            new = await self.settling.stored(match_id, self._store_result, match_id, end)
            self._rated += 1  # (also when not new: read again, never stale)
            if new:
                self._log_finished(match_id, end)
                await self._quarantine(match_id)
        else:
            await self.settling.stored(match_id, self.store.abort_match, match_id, self._host)
            log.info("ladder_match_aborted", match=match_id)

    def _store_result(self, match_id: str, end: MatchEnd) -> bool:
        """Returns whether this call stored the match's result (then rated it)."""
        new = self.store.finish_match(match_id, end.seats(), self._host)
        # Also when not new: a first try may have stored the result and then failed.
        self.store.apply_ratings()
        return new

    async def _quarantine(self, match_id: str) -> None:
        """Quarantines those of the match's bots that qualify (``server.ladder.discipline``)."""
        try:
            row = self.store.match(match_id)
            if row is not None:
                await self.discipline.after_match(row.names)
        except Exception:
            # The result is stored and rated; the next match looks again.
            log.exception("ladder_quarantine_failed", match=match_id)

    def _log_finished(self, match_id: str, end: MatchEnd) -> None:
        row = self.store.match(match_id)
        log.info(
            "ladder_match_finished",
            match=match_id,
            names=list(row.names) if row else [],
            ranks=list(end.ranks),
            delivered=list(end.delivered),
        )
