"""Runs one match on the event loop: its clock, its storage, and its streams' wake-ups.

The match (``server.match``) is a state machine that is handed answers and the
time. Its runner is what hands them over: it calls the match when a seat joins or
answers and when the clock says a deadline or the start timeout has come, and
after each call it looks at the log entries the call appended:

- it wakes the streams that follow the match (``Follower``): at once for a
  decision request to a stream's seat and for the end, otherwise at most the
  stream's hold later (``HOLD_SECONDS``, or what it asked for: ``holding``), so
  that the turns of the others reach a seat in the same message as its next
  decision request;
- it sets the clock for the open decision's default time;
- it stores the match's start and names, and once the match is ending its
  record, before the end is announced (a result is never announced unless it is
  stored);
- with a journal (``server.journal``), it writes each input ahead (the start, a
  join, an accepted answer, a default, an abort) and shows the streams only the
  log up to what is committed (``visible``): no event an input caused leaves the
  server before the input would survive a crash;
- it calls the hooks an in-process watcher (the conformance kit) put on it:
  ``on_entries`` with the entries each call appended, once the runner has acted on
  them, and ``on_answer`` with the outcome of each answer. Hooks run on the loop,
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

from . import storage as st
from .answers import Outcome
from .clock import Clock, Timer
from .events import Asked, Defaulted, Ended, Entry
from .journal import Input, Journal, answer_input
from .match import ENDING, RUNNING, WAITING, Match, iso

log = structlog.get_logger()

HOLD_SECONDS: Final = 0.02
"""How long events that ask nothing of a stream's seat may wait before its stream is
woken: one gRPC message per decision instead of one per event (a stream may ask for
longer, see ``holding``)."""

MAX_HOLD_SECONDS: Final = 10.0
"""The longest hold a stream may ask for."""

HOLD_SLACK: Final = 0.001
"""How early a hold may end: a timer may run a little before its time."""


def holding(batch_ms: int) -> float:
    """Returns the hold of a stream that asked for ``batch_ms`` (ObserveRequest.batch_ms,
    0: the default HOLD_SECONDS), in seconds, at most MAX_HOLD_SECONDS."""
    return HOLD_SECONDS if batch_ms <= 0 else min(batch_ms / 1000, MAX_HOLD_SECONDS)


STORE_ATTEMPTS: Final = 5

EntriesHook = Callable[[Sequence[Entry]], None]
"""Called with the log entries one call into the match appended."""

AnswerHook = Callable[[int, str, Outcome], None]
"""Called with (seat, decision id, outcome) for every answer offered to the match."""


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


class Follower:
    """One open stream of a match: its viewer (a seat, or None for a spectator), the
    event that wakes it, and how far into the match's log it has read."""

    __slots__ = ("cursor", "hold", "viewer", "wake")

    def __init__(self, viewer: int | None, cursor: int, hold: float = HOLD_SECONDS) -> None:
        self.viewer = viewer
        self.cursor = cursor
        self.hold = hold  # seconds events may wait that ask nothing of it
        self.wake = asyncio.Event()


class Runner:
    """One match, driven on the event loop. All methods run on the loop."""

    def __init__(
        self,
        match: Match,
        tokens: tuple[str, ...],
        storage: st.Storage,
        clock: Clock,
        start_timeout: float,
        *,
        token_hashes: tuple[str, ...] = (),
        journal: Journal | None = None,
        resumed: bool = False,
    ) -> None:
        self.match = match
        self.id = match.id
        self.tokens = tokens  # empty for a resumed match: only hashes are kept
        self.token_hashes = token_hashes
        self.storage = storage
        self.clock = clock
        self.journal = journal
        self.visible = len(match.log)  # the log entries streams may send
        self._committed: asyncio.Future[None] | None = None
        self._advanced = asyncio.Event()  # set whenever ``visible`` moves on
        self.followers: set[Follower] = set()
        self.on_entries: list[EntriesHook] = []
        self.on_answer: list[AnswerHook] = []
        # The followers held, by their hold: the timer that wakes the first of them,
        # and each one with the time its hold began.
        self._held: dict[float, tuple[Timer, dict[Follower, float]]] = {}
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
            if match.status == WAITING
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
        renamed = match.join(seat, name, client_seed)
        if renamed:
            self.storage.set_names(self.id, match.names)
        if (
            first
            or renamed
            or (match.fairness is not None and match.fairness.client_seeds[seat] != seeds)
        ):
            self._write({"k": "join", "seat": seat, "name": name, "seed": client_seed})
        if first:
            log.info("seat_joined", match=self.id, seat=seat, name=self.match.names[seat])
        if self.match.all_joined:
            self._start()

    def answer(
        self, seat: int, decision_id: str, option: int | None, action: Action | None
    ) -> Outcome:
        """Returns the outcome of a seat's answer, applied when accepted."""
        before = len(self.match.log)
        now = self.clock.now()
        applied = len(self.match.actions)
        outcome = self.match.answer(seat, decision_id, option, action, now)
        if outcome.accepted and not outcome.repeated:
            # The answer is the first action it appended (seats on autopilot may follow).
            self._write(answer_input(seat, decision_id, self.match.actions[applied][1], now))
        self._after(before)
        for hook in self.on_answer:
            hook(seat, decision_id, outcome)
        return outcome

    def abort(self, reason: str) -> asyncio.Future[MatchResult]:
        """Returns the result future after cutting the match off (no-op once ending)."""
        before = len(self.match.log)
        if self.match.status in (WAITING, RUNNING):
            self._write({"k": "abort", "reason": reason})
        self.match.abort(reason)
        self._after(before)
        return self._result

    def _start(self) -> None:
        if self.match.status != WAITING:
            return
        before = len(self.match.log)
        now = self.clock.now()
        self._write({"k": "start", "at": now})
        self.match.start(now)
        self.storage.set_running(self.id)
        log.info("match_started", match=self.id, players=self.players, names=self.match.names)
        self._after(before)

    def _start_timeout(self) -> None:
        self._start_timer = None
        if self.match.status == WAITING:
            log.info(
                "match_start_timeout",
                match=self.id,
                absent=[i for i, j in enumerate(self.match.joined) if not j],
            )
            self._start()

    def _on_clock(self) -> None:
        self._timer = self._timer_at = None
        before = len(self.match.log)
        present = {f.viewer for f in self.followers}
        absent = [seat for seat in range(self.players) if seat not in present]
        now = self.clock.now()
        if self.match.due(now):
            self._write({"k": "tick", "at": now, "absent": absent})
        self.match.tick(now, absent)
        for entry in self.match.log[before:]:
            if isinstance(entry, Defaulted):
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
            self._committed = self.journal.append(self.id, step)

    async def committed(self) -> None:
        """Returns once every input given so far is committed (at once without a
        journal); raises StorageError when one could not be."""
        if self._committed is not None:
            await asyncio.shield(self._committed)

    async def caught_up(self) -> None:
        """Returns once the whole log so far is visible (every input it came from is
        committed, or the match's end is stored); raises StorageError when an input
        could not be committed.

        Why not only :meth:`committed`: the last input may be committed while earlier
        entries still wait (a match cut off by a failed write shows its log once its
        end is stored), and waiting on a done future again would spin the event loop."""
        while self.visible < len(self.match.log):
            await self.committed()
            if self.visible < len(self.match.log):
                self._advanced.clear()
                await self._advanced.wait()

    def _shown(self, upto: int, done: asyncio.Future[None]) -> None:
        if not done.cancelled() and done.exception() is not None:
            # The input is not durable: what it caused stays unsent, and the match is
            # cut off (it could not be resumed as it is).
            self.abort("its journal could not be written")
            return
        self._show(upto)

    def _show(self, upto: int) -> None:
        """Makes the log up to ``upto`` visible to the streams and wakes them."""
        if upto > self.visible:
            new = self.match.log[self.visible : upto]
            self.visible = upto
            self._advanced.set()
            self._notify(new)

    def _after(self, before: int) -> None:
        match = self.match
        new = match.log[before:]
        if new:
            committed = self._committed
            if committed is None or committed.done() or isinstance(new[-1], Ended):
                self._show(len(match.log))
            else:
                committed.add_done_callback(functools.partial(self._shown, len(match.log)))
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
        if match.status == ENDING and self._ending is None:
            # An ended match wakes for nothing more: its timers go, and with them the
            # event loop's references to it.
            for timer in (
                self._start_timer,
                self._timer,
                *(timer for timer, _ in self._held.values()),
            ):
                if timer is not None:
                    timer.cancel()
            self._start_timer = self._timer = self._timer_at = None
            self._held.clear()  # (the end wakes every follower)
            self._ending = asyncio.ensure_future(self._store_and_announce())
        if new:
            for hook in self.on_entries:
                hook(new)

    def _notify(self, new: list[Entry]) -> None:
        """Wakes the followers that the new entries ask something of now, and the
        others after the hold."""
        ended = any(isinstance(e, Ended) for e in new)
        asked = {e.decision.seat for e in new if isinstance(e, Asked)}
        for f in self.followers:
            if ended or f.viewer in asked:
                f.wake.set()
                self._unhold(f)
            else:
                self.hold(f)

    def hold(self, f: Follower) -> None:
        """Wakes a follower at most its hold from now, or from when it was first held
        since it was last woken (sooner if something urgent for it comes first)."""
        now = self.clock.now()
        held = self._held.get(f.hold)
        if held is None:
            held = self._held[f.hold] = (self._release_at(now + f.hold, f.hold), {})
        held[1].setdefault(f, now)

    def _release_at(self, when: float, hold: float) -> Timer:
        return self.clock.call_at(when, functools.partial(self._release, hold))

    def _release(self, hold: float) -> None:
        """Wakes the followers whose hold is over; the timer waits on for the others.

        One timer per hold, not per follower: the seats that answered wait for their
        next request together, each for its own hold (a timer that woke every one at
        the first one's time would send a message of its own to each seat held for
        less, several times a second in a busy match)."""
        _, held = self._held.pop(hold, (None, {}))
        now = self.clock.now()
        due = [f for f, since in held.items() if since + hold <= now + HOLD_SLACK]
        for f in due:
            del held[f]
            f.wake.set()
        if held:
            self._held[hold] = (self._release_at(min(held.values()) + hold, hold), held)

    def _unhold(self, f: Follower) -> None:
        held = self._held.get(f.hold)
        if held is not None:
            held[1].pop(f, None)

    def follow(self, viewer: int | None, hold: float = HOLD_SECONDS) -> Follower:
        """Returns a new follower of the match's log from its end (the stream's snapshot
        covers what came before), whose events that ask nothing of it may wait ``hold``
        seconds."""
        f = Follower(viewer, len(self.match.log), hold)
        self.followers.add(f)
        return f

    def unfollow(self, f: Follower) -> None:
        """Forgets a follower whose stream has closed."""
        self.followers.discard(f)
        self._unhold(f)

    # -- the end -------------------------------------------------------------------

    async def _store_and_announce(self) -> None:
        match = self.match
        now = self.clock.now()
        record = match.record(now)
        stored = False
        pending = match.result(stored=True)
        for attempt in range(1, STORE_ATTEMPTS + 1):
            try:
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
            except st.StorageError as e:
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
