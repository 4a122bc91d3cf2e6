"""Runs one match on the event loop: its clock, its storage, and what its streams may show.

The match (``server.match``) is a state machine that is handed answers and the
time. Its runner is what hands them over: it calls the match when a seat joins or
answers and when the clock says a deadline or the start timeout has come, and
after each call it looks at the log entries the call appended:

- it shows them to the match's streams (``server.streams``, which decides what
  leaves for each stream and when);
- it sets the clock for the open decision's default time;
- it stores the match's start and names, and once the match is ending its
  record, before the end is announced (a result is never announced unless it is
  stored);
- with a journal (``server.db.journal``), it writes each input ahead (the start, a
  join, an accepted answer, a default, an abort) and shows the streams only the
  log up to what is committed: no event an input caused leaves the server before
  the input would survive a crash;
- it calls the hooks an in-process watcher (the conformance kit) put on it:
  ``on_entries`` with the entries each call appended, once the runner has acted on
  them, and ``on_answer`` with the ruling on each answer. Hooks run on the loop,
  inside the call: they must not call into the runner themselves (schedule that,
  e.g. with ``loop.call_soon``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import structlog

from mammamia.actions import Action

from .answers import Ruling
from .clock import Clock, Timer
from .db.connection import StorageError
from .db.journal import Journal
from .db.matches import Storage
from .events import Defaulted, Ended, Entry
from .inputs import Abort, Answer, Input, Join, Start, Tick, apply
from .match import Match, iso
from .metrics import Metrics
from .notes import by_seat
from .status import MatchStatus
from .streams import Open, Streams

log = structlog.get_logger()

STORE_ATTEMPTS: Final = 5

EntriesHook = Callable[[Sequence[Entry]], None]
"""Called with the log entries one call into the match appended."""

AnswerHook = Callable[[int, str, Ruling], None]
"""Called with (seat, decision id, ruling) for every answer offered to the match."""


@dataclass(frozen=True, slots=True)
class MatchResult:
    """How a match ended, once its record is stored.

    ``status`` is ``finished`` or ``aborted``; for an aborted match ``winners`` is
    empty and ``ranks``/``delivered`` describe the game where it was cut off.
    """

    match_id: str
    status: str
    winners: tuple[int, ...]
    ranks: tuple[int, ...]
    delivered: tuple[int, ...]
    names: tuple[str, ...]
    record: str
    reason: str | None = None
    first_player: int | None = None  # the seat that began round 1


class Runner:
    """One match, driven on the event loop. All methods run on the loop."""

    def __init__(
        self,
        match: Match,
        tokens: tuple[str, ...],
        storage: Storage,
        clock: Clock,
        start_timeout: float,
        *,
        token_hashes: tuple[str, ...] = (),
        journal: Journal | None = None,
        resumed: bool = False,
        opened: Open | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.match = match
        self.metrics = metrics
        self.id = match.id
        self.tokens = tokens  # empty for a resumed match: only hashes are kept
        self.token_hashes = token_hashes
        self.storage = storage
        self.clock = clock
        self.journal = journal
        self.streams = Streams(match, clock, opened)
        self.on_entries: list[EntriesHook] = []
        self.on_answer: list[AnswerHook] = []
        self._timer: Timer | None = None
        self._timer_at: float | None = None
        self._ending: asyncio.Task[None] | None = None
        self._result: asyncio.Future[MatchResult] = asyncio.get_running_loop().create_future()
        if not resumed:
            storage.add_match(
                match.id, match.players, match.names, match.settings.ladder, iso(match.created)
            )
        # A resumed match that still waits gets its start timeout again from now.
        start_from = clock.now() if resumed else match.created
        self._start_timer: Timer | None = (
            clock.call_at(start_from + start_timeout, self._start_timeout)
            if match.status == MatchStatus.WAITING
            else None
        )
        if resumed:
            self._after(0)  # the open decision's timer; nothing to send yet

    # -- what the match is ---------------------------------------------------------

    @property
    def players(self) -> int:
        """Returns the number of seats."""
        return self.match.players

    @property
    def ended(self) -> bool:
        """Whether the match has ended and its record is stored."""
        return self._result.done()

    async def result(self) -> MatchResult:
        """Returns the result once the match has ended and its record is stored."""
        return await asyncio.shield(self._result)

    def record_so_far(self) -> str:
        """Returns the game record of the actions taken so far (JSON text)."""
        return self.match.record(self.clock.now())

    # -- calls into the match ------------------------------------------------------

    def join(self, seat: int, name: str | None = None, client_seed: str | None = None) -> None:
        """Takes a seat (again), with a name and a client seed (see Match.join); starts
        the match once every seat is in."""
        match = self.match
        first = not match.joined[seat]
        seeds = match.fairness.client_seeds[seat] if match.fairness is not None else None
        step = Join(seat, name, client_seed)
        renamed = apply(match, step)
        if renamed:
            self.storage.set_names(self.id, match.names)
        if (
            first
            or renamed
            or (match.fairness is not None and match.fairness.client_seeds[seat] != seeds)
        ):
            self._write(step)
        if first:
            log.info("seat_joined", match=self.id, seat=seat, name=self.match.names[seat])
        if self.match.all_joined:
            self._start()

    def answer(
        self,
        seat: int,
        decision_id: str,
        option: int | None,
        action: Action | None,
        note: str = "",
    ) -> Ruling:
        """Returns the ruling on a seat's answer, applied (with its private ``note``,
        already fitted: server.notes) when accepted."""
        before = len(self.match.log)
        now = self.clock.now()
        applied = len(self.match.actions)
        asked = self.match.decision
        ruling = apply(self.match, Answer(seat, decision_id, action, now, option, note))
        if ruling.accepted and not ruling.repeated:
            # The answer is the first action it appended (seats on autopilot may follow).
            self._write(Answer(seat, decision_id, self.match.actions[applied][1], now, note=note))
            if self.metrics is not None and asked is not None:
                match = self.match
                self.metrics.answered(match.names[seat], match.settings.ladder, now - asked.asked)
        self._after(before)
        for hook in self.on_answer:
            hook(seat, decision_id, ruling)
        return ruling

    def abort(self, reason: str) -> asyncio.Future[MatchResult]:
        """Returns the result future after cutting the match off (no-op once ending)."""
        before = len(self.match.log)
        step = Abort(reason)
        if self.match.status in (MatchStatus.WAITING, MatchStatus.RUNNING):
            self._write(step)
        apply(self.match, step)
        self._after(before)
        return self._result

    def _start(self) -> None:
        if self.match.status != MatchStatus.WAITING:
            return
        before = len(self.match.log)
        now = self.clock.now()
        step = Start(now)
        self._write(step)
        apply(self.match, step)
        self.storage.set_running(self.id)
        log.info("match_started", match=self.id, players=self.players, names=self.match.names)
        self._after(before)

    def _start_timeout(self) -> None:
        self._start_timer = None
        if self.match.status == MatchStatus.WAITING:
            log.info(
                "match_start_timeout",
                match=self.id,
                absent=[i for i, j in enumerate(self.match.joined) if not j],
            )
            self._start()

    def _on_clock(self) -> None:
        self._timer = self._timer_at = None
        before = len(self.match.log)
        present = {f.viewer for f in self.streams.followers}
        absent = [seat for seat in range(self.players) if seat not in present]
        now = self.clock.now()
        step = Tick(now, tuple(absent))
        if self.match.due(now):
            self._write(step)
        apply(self.match, step)
        for entry in self.match.log[before:]:
            if isinstance(entry, Defaulted):
                if self.metrics is not None:
                    self.metrics.missed(
                        self.match.names[entry.seat], self.match.settings.ladder, entry.reason
                    )
                log.info(
                    "deadline_passed",
                    match=self.id,
                    seat=entry.seat,
                    decision=entry.decision_id,
                    reason=entry.reason,
                    strikes=entry.strikes,
                    autopilot=entry.autopilot,
                )
        self._after(before)

    # -- after every call ----------------------------------------------------------

    def _write(self, step: Input) -> None:
        """Writes an input ahead (with a journal); what it causes is shown once it is in."""
        if self.journal is not None:
            self.streams.written(self.journal.append(self.id, step))

    async def committed(self) -> None:
        """Returns once every input given so far is committed (at once without a
        journal); raises StorageError when one could not be."""
        await self.streams.committed()

    def _shown(self, upto: int, done: asyncio.Future[None]) -> None:
        if not done.cancelled() and done.exception() is not None:
            # The input is not durable: what it caused stays unsent, and the match is
            # cut off (it could not be resumed as it is).
            self.abort("its journal could not be written")
            return
        self.streams.show(upto)

    def _after(self, before: int) -> None:
        match = self.match
        new = match.log[before:]
        if new:
            writing = self.streams.pending()
            if writing is None or isinstance(new[-1], Ended):
                self.streams.show(len(match.log))
            else:
                writing.add_done_callback(functools.partial(self._shown, len(match.log)))
        when = match.wake_at()
        # One timer per match, moved only to wake earlier: most decisions are answered
        # long before their default time, and the next one's comes later, so a timer
        # that fires early just finds nothing due and is set again (``_on_clock``),
        # instead of a timer made and cancelled at every decision.
        if when is not None and (self._timer_at is None or when < self._timer_at):
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self.clock.call_at(when, self._on_clock)
            self._timer_at = when
        if match.status == MatchStatus.ENDING and self._ending is None:
            # An ended match wakes for nothing more: its timers go, and with them the
            # event loop's references to it.
            for timer in (self._start_timer, self._timer):
                if timer is not None:
                    timer.cancel()
            self._start_timer = self._timer = self._timer_at = None
            self.streams.end_holds()
            self._ending = asyncio.ensure_future(self._store_and_announce())
        if new:
            for hook in self.on_entries:
                hook(new)

    # -- the end -------------------------------------------------------------------

    async def _store_and_announce(self) -> None:
        match = self.match
        now = self.clock.now()
        record = match.record(now)
        stored = False
        pending = match.result(stored=True)
        notes = by_seat(match.notes, self.token_hashes)
        for attempt in range(1, STORE_ATTEMPTS + 1):
            try:
                await self.storage.store_notes(self.id, notes)
                stored = await self.storage.end_match(
                    self.id,
                    pending.status,
                    record,
                    players=match.players,
                    names=match.names,
                    ladder=match.settings.ladder,
                    created=iso(match.created),
                    winners=pending.winners,
                    ranks=pending.ranks,
                    delivered=pending.delivered,
                    reason=pending.reason,
                )
                if not stored:
                    # The row had ended already (another server on the file marked it
                    # aborted): what is stored is not this end, so it is not announced.
                    log.error(
                        "match_end_not_stored",
                        match=self.id,
                        reason="the stored match had already ended",
                    )
                break
            except StorageError as e:
                log.error("match_store_failed", match=self.id, attempt=attempt, error=str(e))
                await asyncio.sleep(0.1 * 2**attempt)
        # Never announce a result that is not stored: the match counts as cut off
        # (the database still says it runs, and the next start marks it aborted).
        ended = match.result(stored)
        before = len(match.log)
        match.finish(ended)
        self._after(before)
        log.info(
            "match_ended",
            match=self.id,
            status=ended.status,
            winners=list(ended.winners),
            delivered=list(ended.delivered),
            reason=ended.reason,
        )
        self._result.set_result(
            MatchResult(
                self.id,
                ended.status,
                ended.winners,
                ended.ranks,
                ended.delivered,
                tuple(match.names),
                record,
                ended.reason,
                match.state.events[0][2],
            )
        )
