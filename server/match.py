"""One match: the game, its seats, the decisions it asks, the clock, and what each seat sees.

The match is driven by its answers: an accepted answer is applied at once and the
next decision is asked in the same call, so the answer path costs one engine step
and one encoded request. The match's clock applies the default action when the
deadline (and then the seat's time bank, if any) passes. It is one timer per match,
not one per decision: most decisions are answered long before their deadline, so
the timer wakes at the earliest deadline it was set for, finds a later decision
open, and sleeps again until that one's deadline.

- the default action is the first option for a turn and declining for a
  resolution (always an option, R-RES-8); it is written to the record's
  ``meta.timeouts`` (``{"action", "seat", "decision", "reason"}``; ``action`` is the
  0-based index of the default action in the record's ``actions``) with the reason
  (``deadline`` when the seat was connected but did not answer in time,
  ``disconnected`` when no stream to the seat was open) and counts a strike for the
  seat;
- three consecutive strikes hand the seat to the default policy until the end
  (``meta.autopilot``: ``{"seat", "from_action", "reason"}``; ``from_action`` is the
  0-based index in ``actions`` of the third strike's default action, and every later
  action of the seat is the policy's); the match still counts.

Every seat has its own numbered event log, and so have the spectators; a log holds
encoded ``SeatEvent``s, each ready to be joined into a ``SeatEvents`` message
(``server.wire.entry``), so that a stream sends everything pending as one message
and a reconnecting client is sent the same bytes again from any sequence number.
Public events go to every log; a decision request goes only to its seat's.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import structlog
from grpc import StatusCode

from mammamia import IllegalActionError, Resolve, State, public_events, record_of, view_of
from mammamia.actions import Action

from . import storage as st
from . import wire
from .tokens import new_token

log = structlog.get_logger()

DEFAULT_DEADLINE_MS: Final = 5000
STRIKES_TO_AUTOPILOT: Final = 3
STORE_ATTEMPTS: Final = 5
NAME_LIMIT: Final = 64

_DECLINE: Final = Resolve(False)


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


HOLD_SECONDS: Final = 0.02
"""How long events that ask nothing of a stream's seat may wait before its stream is
woken: the turns of the others then reach a seat in the same message as its next
decision request, one gRPC message per decision instead of one per event."""


class EventLog:
    """One stream's encoded events as ``SeatEvents`` entries; ``entries[i]`` carries
    sequence ``i + 1``.

    Listeners (the streams' writers) are woken at once for a decision request and at
    the match's end; other events wake them at most ``HOLD_SECONDS`` later, so that
    they go out together with whatever comes next.
    """

    __slots__ = ("_hold", "closed", "entries", "listeners")

    def __init__(self) -> None:
        self.entries: list[bytes] = []
        self.listeners: set[asyncio.Event] = set()
        self.closed = False
        self._hold: asyncio.TimerHandle | None = None

    def append(self, body: bytes, urgent: bool = False) -> int:
        """Returns the sequence number given to an event body after storing it;
        ``urgent`` (a decision request) wakes the listeners at once."""
        seq = len(self.entries) + 1
        self.entries.append(wire.entry(wire.frame(seq, body)))
        if urgent:
            self.wake()
        elif self._hold is None and self.listeners:
            self._hold = asyncio.get_running_loop().call_later(HOLD_SECONDS, self.wake)
        return seq

    def wake(self) -> None:
        """Wakes every listener now (and drops a pending delayed wake)."""
        if self._hold is not None:
            self._hold.cancel()
            self._hold = None
        for listener in self.listeners:
            listener.set()

    def close(self) -> None:
        """Marks the log complete (the match has ended) and wakes every listener."""
        self.closed = True
        self.wake()


@dataclass(slots=True)
class Decision:
    """A decision asked of one seat and not yet taken."""

    id: str
    seat: int
    resolve: bool
    options: tuple[Action, ...]
    view: bytes                 # the seat's encoded View when asked
    options_field: bytes        # the encoded options
    sequence: int               # its place in the seat's log
    deadline: float             # loop time
    wall_deadline: int          # UNIX time in nanoseconds
    in_bank: bool = False       # the deadline has passed; the time bank runs


@dataclass(slots=True)
class Answer:
    """The outcome of an answer: a gRPC status code and why."""

    code: StatusCode
    message: str = ""

    @property
    def ok(self) -> bool:
        """Whether the answer was accepted (or had been, for a repeated answer)."""
        return self.code is StatusCode.OK


_ACCEPTED: Final = Answer(StatusCode.OK)


@dataclass(slots=True)
class Settings:
    """What an organiser (or the ladder) chose for a match."""

    deadline_ms: int = DEFAULT_DEADLINE_MS
    time_bank_ms: int = 0
    ladder: bool = False
    start_timeout: float = 30.0
    names: list[str] = field(default_factory=list)


class Match:
    """A match from creation to its stored record. All methods run on the event loop."""

    def __init__(self, match_id: str, game: State, seed: int, settings: Settings,
                 storage: st.Storage) -> None:
        n = game.players
        self.id = match_id
        self.state = game
        self.seed = seed
        self.settings = settings
        self.players = n
        self.tokens = tuple(new_token() for _ in range(n))
        self.names = [(settings.names[i] if i < len(settings.names) else "")[:NAME_LIMIT]
                      for i in range(n)]
        self.status = st.WAITING
        self.created = st.now_iso()
        self.started: str | None = None
        self.storage = storage
        self.seat_logs = [EventLog() for _ in range(n)]
        self.spectators = EventLog()
        self.joined = [False] * n
        self.actions: list[tuple[int, Action]] = []
        self.decision: Decision | None = None
        self._decisions = 0
        self._seat_of_decision: dict[str, int] = {}
        self._answers: dict[str, tuple[Action, tuple[Action, ...]]] = {}  # for idempotency
        self._defaults: set[str] = set()             # decided by the server at a deadline
        self._published = 0                          # engine events sent so far
        self.strikes = [0] * n                       # consecutive
        self.strikes_total = [0] * n
        self.time_bank_ms = [settings.time_bank_ms] * n
        self.autopilot: set[int] = set()
        self.timeouts: list[dict[str, Any]] = []
        self.autopilot_meta: list[dict[str, Any]] = []
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._all_joined: asyncio.Future[None] = loop.create_future()
        self._result: asyncio.Future[MatchResult] = loop.create_future()
        self._finishing = False
        self._ending: asyncio.Future[None] | None = None
        self._clock: asyncio.TimerHandle | None = None
        storage.add_match(match_id, n, self.names, settings.ladder, self.created)

    # -- life ------------------------------------------------------------------------

    @property
    def ended(self) -> bool:
        """Whether the match has ended and its record is stored."""
        return self._result.done()

    async def result(self) -> MatchResult:
        """Returns the result once the match has ended and its record is stored."""
        return await asyncio.shield(self._result)

    async def run(self) -> MatchResult:
        """Returns the result after waiting for the seats (or the start timeout) and
        playing the match to its end."""
        if self.status == st.WAITING:
            try:
                await asyncio.wait_for(asyncio.shield(self._all_joined),
                                       self.settings.start_timeout)
            except TimeoutError:
                log.info("match_start_timeout", match=self.id,
                         absent=[i for i, j in enumerate(self.joined) if not j])
            if self.status == st.WAITING and not self._finishing:
                self._begin()
        return await self.result()

    def join(self, seat: int, name: str | None = None) -> None:
        """Takes a seat (again): records the name, and starts the match once all are in.

        A ladder match keeps the ladder's names: the name a seat asks for is ignored,
        so that a bot cannot pass itself off as another in the ladder's records.
        """
        if name and not self.settings.ladder:
            name = name[:NAME_LIMIT]
            if name != self.names[seat]:
                self.names[seat] = name
                if not self.ended:
                    self.storage.set_names(self.id, self.names)
        if not self.joined[seat]:
            self.joined[seat] = True
            log.info("seat_joined", match=self.id, seat=seat, name=self.names[seat])
            if all(self.joined) and not self._all_joined.done():
                self._all_joined.set_result(None)

    def _begin(self) -> None:
        self.status = st.RUNNING
        self.started = st.now_iso()
        self.storage.set_running(self.id)
        log.info("match_started", match=self.id, players=self.players, names=self.names)
        self._ask()

    # -- asking ----------------------------------------------------------------------

    def _publish(self, events: Sequence[Any], first: int = 0) -> None:
        """Sends new public events to every seat and to the spectators, seat ``first``
        (the one about to be asked) first, so that its stream is woken first."""
        logs = self.seat_logs[first:] + self.seat_logs[:first]
        for e in events:
            body = wire.event_body(e)
            if body is not None:
                for seat_log in logs:
                    seat_log.append(body)
                self.spectators.append(body)
        self._published += len(events)

    def _ask(self) -> None:
        """Asks the next decision, applying defaults for seats on autopilot, until a
        seat must answer or the game is over."""
        state = self.state
        while not state.is_over:
            seat = state.to_act
            assert seat is not None
            if seat in self.autopilot:
                self._apply(seat, self._default())
                continue
            view = view_of(state, seat, history=False)
            self._publish(public_events(state, self._published), seat)
            self._decisions += 1
            decision_id = f"d{self._decisions}"
            self._seat_of_decision[decision_id] = seat
            deadline_s = self.settings.deadline_ms / 1000
            now = self._loop.time()
            d = Decision(decision_id, seat, state.phase == "resolve", view.legal,
                         wire.view_bytes(view, self.names),
                         wire.options_field(view.legal), 0, now + deadline_s,
                         time.time_ns() + self.settings.deadline_ms * 1_000_000)
            d.sequence = self.seat_logs[seat].append(self._decision_body(d), urgent=True)
            self.decision = d
            self._wake_at(d.deadline)
            return
        self.decision = None
        self._stop_clock()
        self._publish(public_events(state, self._published))
        self._game_over()

    def _decision_body(self, d: Decision) -> bytes:
        now = self._loop.time()
        left = d.deadline - now
        bank = self.time_bank_ms[d.seat]
        if d.in_bank:
            # Past the deadline: what is left is the rest of the bank.
            bank, left = int(bank - (now - d.deadline) * 1000), 0
        return wire.decision_body(d.id, d.resolve, d.view, d.options_field, d.wall_deadline,
                                  int(left * 1000), bank)

    def open_decision_for(self, seat: int) -> tuple[int, bytes] | None:
        """Returns (sequence, ``SeatEvents`` entry) of the seat's open decision, re-stamped
        with the time left now, or None when the seat is not asked."""
        d = self.decision
        if d is None or d.seat != seat:
            return None
        return d.sequence, wire.entry(wire.frame(d.sequence, self._decision_body(d)))

    def _default(self) -> Action:
        """Returns the default action: the first option of a turn, declining a resolution."""
        state = self.state
        return _DECLINE if state.phase == "resolve" else state.legal_actions()[0]

    def _apply(self, seat: int, action: Action) -> None:
        self.state.apply(action)
        self.actions.append((seat, action))

    # -- answers ---------------------------------------------------------------------

    def answer(self, seat: int, decision_id: str, option: int | None,
               action: Action | None) -> Answer:
        """Returns the outcome of a seat's answer; applies it (and asks the next
        decision) when accepted. Exactly one of ``option`` and ``action`` is given."""
        d = self.decision
        if d is None or d.id != decision_id:
            return self._not_open(seat, decision_id, option, action)
        if d.seat != seat:
            return Answer(StatusCode.PERMISSION_DENIED,
                          f"decision {decision_id!r} belongs to seat {d.seat}, not seat {seat}")
        if option is not None:
            if not 0 <= option < len(d.options):
                return Answer(StatusCode.INVALID_ARGUMENT,
                              f"option {option} does not exist: decision {decision_id!r} "
                              f"offers options 0..{len(d.options) - 1}")
            action = d.options[option]
        elif action not in d.options:
            assert action is not None
            return Answer(StatusCode.INVALID_ARGUMENT, self._why_illegal(action))
        # Accepted: charge the time bank, clear the strikes.
        if d.in_bank:
            used = int((self._loop.time() - d.deadline) * 1000)
            self.time_bank_ms[seat] = max(0, self.time_bank_ms[seat] - used)
        self.strikes[seat] = 0
        self._answers[decision_id] = (action, d.options)
        self.decision = None
        self._apply(seat, action)
        self._ask()
        return _ACCEPTED

    def _not_open(self, seat: int, decision_id: str, option: int | None,
                  action: Action | None) -> Answer:
        owner = self._seat_of_decision.get(decision_id)
        if owner is None:
            return Answer(StatusCode.FAILED_PRECONDITION,
                          f"decision {decision_id!r} is not open: no such decision in "
                          f"match {self.id}")
        if owner != seat:
            return Answer(StatusCode.PERMISSION_DENIED,
                          f"decision {decision_id!r} belongs to seat {owner}, not seat {seat}")
        if decision_id in self._defaults:
            return Answer(StatusCode.FAILED_PRECONDITION,
                          f"decision {decision_id!r} is stale: the server took the default "
                          f"action at its deadline")
        given = self._answers.get(decision_id)
        if given is not None:
            accepted, options = given
            if option is not None:
                action = options[option] if 0 <= option < len(options) else None
            if action == accepted:
                return _ACCEPTED     # the same answer again: the same result
        return Answer(StatusCode.FAILED_PRECONDITION,
                      f"decision {decision_id!r} is stale: already answered")

    def _why_illegal(self, action: Action) -> str:
        try:
            self.state.copy().apply(action)
        except IllegalActionError as e:
            return f"illegal answer {action}: {e}"
        return f"illegal answer {action}: not one of the options offered"

    # -- the clock -------------------------------------------------------------------

    def _wake_at(self, when: float) -> None:
        """Makes sure the clock wakes at loop time ``when`` or earlier."""
        clock = self._clock
        if clock is not None:
            if clock.when() <= when:
                return
            clock.cancel()
        self._clock = self._loop.call_at(when, self._on_clock)

    def _stop_clock(self) -> None:
        if self._clock is not None:
            self._clock.cancel()
            self._clock = None

    def _on_clock(self) -> None:
        """Applies the deadline of the open decision if it has passed, else sleeps until it."""
        self._clock = None
        d = self.decision
        if d is None:
            return
        due = d.deadline + (self.time_bank_ms[d.seat] / 1000 if d.in_bank else 0)
        if self._loop.time() < due:
            self._wake_at(due)
        else:
            self._on_deadline(d)

    def _on_deadline(self, d: Decision) -> None:
        seat = d.seat
        if not d.in_bank and self.time_bank_ms[seat] > 0:
            d.in_bank = True
            d.deadline = self._loop.time()
            self._wake_at(d.deadline + self.time_bank_ms[seat] / 1000)
            return
        if d.in_bank:
            self.time_bank_ms[seat] = 0
        action = self._default()
        self.strikes[seat] += 1
        self.strikes_total[seat] += 1
        # Why: too slow while connected, or no stream open to the seat at all.
        reason = "deadline" if self.seat_logs[seat].listeners else "disconnected"
        self.timeouts.append({"action": len(self.actions), "seat": seat, "decision": d.id,
                              "reason": reason})
        log.info("deadline_passed", match=self.id, seat=seat, decision=d.id, reason=reason,
                 strikes=self.strikes[seat])
        if self.strikes[seat] >= STRIKES_TO_AUTOPILOT:
            self.autopilot.add(seat)
            self.autopilot_meta.append({
                "seat": seat, "from_action": len(self.actions),
                "reason": f"{STRIKES_TO_AUTOPILOT} consecutive deadlines passed"})
            log.info("seat_on_autopilot", match=self.id, seat=seat)
        self._defaults.add(d.id)
        self.decision = None
        self._apply(seat, action)
        self._ask()

    # -- the end ---------------------------------------------------------------------

    def _meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "match": self.id, "names": list(self.names), "created": self.created,
            "started": self.started, "ended": st.now_iso(),
            "deadline_ms": self.settings.deadline_ms, "strikes": list(self.strikes_total),
            "timeouts": list(self.timeouts), "autopilot": list(self.autopilot_meta),
        }
        if self.settings.time_bank_ms:
            meta["time_bank_ms"] = self.settings.time_bank_ms
        if self.settings.ladder:
            meta["ladder"] = True
        return meta

    def _game_over(self) -> None:
        if self._finishing:
            return
        self._finishing = True
        self._ending = asyncio.ensure_future(self._store_and_announce(st.FINISHED, None))

    def abort(self, reason: str) -> asyncio.Future[MatchResult]:
        """Returns the result future after cutting the match off (no-op once ending)."""
        if not self._finishing:
            self._finishing = True
            self.decision = None
            self._stop_clock()
            if not self._all_joined.done():
                self._all_joined.set_result(None)
            self._ending = asyncio.ensure_future(self._store_and_announce(st.ABORTED, reason))
        return self._result

    async def _store_and_announce(self, status: str, reason: str | None) -> None:
        state = self.state
        meta = self._meta()
        if reason is not None:
            meta["aborted"] = reason
        record = record_of(self.state, self.actions, seed=self.seed, meta=meta).dumps()
        finished = status == st.FINISHED
        winners = tuple(state.winners()) if finished else ()
        ranks = tuple(state.ranking())
        delivered = tuple(d for d, _ in state.scores())
        for attempt in range(1, STORE_ATTEMPTS + 1):
            try:
                await self.storage.end_match(
                    self.id, status, record, players=self.players, names=self.names,
                    ladder=self.settings.ladder, created=self.created, winners=winners,
                    ranks=ranks, delivered=delivered, reason=reason)
                break
            except sqlite3.Error as e:
                log.error("match_store_failed", match=self.id, attempt=attempt, error=str(e))
                await asyncio.sleep(0.1 * 2 ** attempt)
        else:
            # Never announce a result that is not stored: the match counts as cut off
            # (the database still says it runs, and the next start marks it aborted).
            status, winners = st.ABORTED, ()
            reason = "its record could not be stored"
        self.status = status
        result = MatchResult(self.id, status, winners, ranks, delivered, tuple(self.names),
                             record, reason)
        body = wire.match_ended_body(status, winners, delivered, ranks)
        for event_log in (*self.seat_logs, self.spectators):
            event_log.append(body)
            event_log.close()
        log.info("match_ended", match=self.id, status=status, winners=list(winners),
                 delivered=list(delivered), reason=reason)
        self._result.set_result(result)

    def record_so_far(self) -> str:
        """Returns the game record of the actions taken so far (JSON text)."""
        return record_of(self.state, self.actions, seed=self.seed, meta=self._meta()).dumps()
