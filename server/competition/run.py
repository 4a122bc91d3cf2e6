"""A competition as a server runs it: its phases, changed on schedule or by the
organiser and stamped in the database, and what each phase allows the ladder.

One :class:`CompetitionRun` per server started with ``mammamia serve --competition
FILE``. Its background task (:meth:`CompetitionRun.run`) ticks on the event loop;
every read and write goes through its writer thread, so the loop never waits for
the database. At each tick it reads the competition's stamps and:

- on the host that drives the competition (every host may serve; one at a time
  drives: ``CompetitionStore.drive``), stamps each phase whose start has come
  (who: ``schedule``), fixes the finals field at the freeze, and plays the finals
  (``server.competition.playing``);
- on every host, holds the ladder from the freeze on (no ladder table is formed)
  and closes registration once the registration phase has ended
  (``Ladder.Register`` is refused with FAILED_PRECONDITION naming the phase).

An organiser's phase change (:meth:`CompetitionRun.advance`) and release of the
results (:meth:`CompetitionRun.release`) are written at once, by whichever host
takes the call; the host that drives follows at its next tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import structlog

from server.db.competition import CompetitionState, CompetitionStore, Stamp, StampError
from server.db.ladder.rows import ALL_PLAYERS
from server.db.writer import Writer

from . import finals
from .config import PHASE_RULES, PHASES, Competition

if TYPE_CHECKING:
    from server.ladder.ladder import Ladder

log = structlog.get_logger()

#: How often the phases are read and the schedule checked (seconds).
TICK_S = 0.25

#: The phases in which the ladder forms its own tables.
LADDER_PHASES = ("registration", "ladder")

#: The phases from which the finals field is fixed.
FIELD_PHASES = ("freeze", "finals", "closed")


async def _no_finals(run: CompetitionRun) -> None:
    log.warning("competition_finals_not_played", competition=run.name, hint="no finals player")


class CompetitionError(Exception):
    """An organiser's call that the competition's state refuses (the message says why)."""


class CompetitionRun:
    """One competition on one server (see the module)."""

    def __init__(
        self,
        competition: Competition,
        store: CompetitionStore,
        ladder: Ladder,
        *,
        clock: Callable[[], float] = time.time,
        tick: float = TICK_S,
        host_id: str = "",
        advertise: Callable[[], str] = str,
        play: Callable[[CompetitionRun], Awaitable[None]] | None = None,
    ) -> None:
        self.competition = competition
        #: Plays the finals to their end (``server.competition.playing.play_finals``).
        self.play = play or _no_finals
        self.name = competition.name
        self.store = store
        self.ladder = ladder
        self.clock = clock
        self.tick_s = tick
        self.host_id = host_id
        self.advertise = advertise
        self.writer = Writer("competition-writer")
        #: The competition as last read (None until it has begun).
        self.state: CompetitionState | None = None
        #: Whether this host drives the phases and the finals.
        self.driving = False
        self._finals: asyncio.Task[None] | None = None
        #: Whether the finals field could not be formed (too few bots registered).
        self._fieldless = False
        ladder.registration_checks.append(self._registration_closed)

    @property
    def phase(self) -> str:
        """Returns the competition's phase as last read."""
        return self.state.phase if self.state is not None else PHASES[0]

    async def _registration_closed(self) -> str | None:
        phase = self.phase
        if phase == PHASES[0]:
            return None
        return (
            f"registration for {self.name!r} is closed: the competition is in its "
            f"{phase} phase ({PHASE_RULES[phase]})"
        )

    def recover(self) -> list[str]:
        """Start-up, before the ladder recovers (on the calling thread): takes the
        drive when it is free, begins the competition when no host has, and ends what
        a restart cut off (:meth:`_cut_off`); returns the ids of the matches aborted."""
        aborted: list[str] = []
        if self.store.drive(self.name):
            self.driving = True
            self._open()
            aborted = self._cut_off("restarted")
        self.state = self.store.state(self.name)
        self.ladder.hold(self.phase not in LADDER_PHASES)
        return aborted

    def _cut_off(self, why: str) -> list[str]:
        """Taking the drive (on the writer's thread, or at start-up): marks aborted
        the finals matches the host that drove before left running (so that the
        ladder never settles them as its own, and the finals play on from the next
        round) and reveals the tables it left sealed (their finished matches count
        and verify); returns the ids of the matches aborted."""
        aborted = self.store.abort_running(self.name)
        if aborted:
            log.info("competition_matches_aborted", matches=aborted, reason=why)
        for set_id in self.store.sealed(self.name):
            self.store.reveal_table(set_id)
            log.info("competition_table_revealed", competition=self.name, set=set_id, reason=why)
        return aborted

    def _open(self) -> None:
        start = self.competition.start
        started = start if start is not None else self.clock()
        if self.store.open(self.name, self.competition.text, started, "the competition began"):
            log.info("competition_opened", competition=self.name, started=started)
            log.info(
                "competition_phase",
                competition=self.name,
                phase=PHASES[0],
                who="schedule",
                reason="the competition began",
            )

    async def run(self) -> None:
        """Ticks until cancelled (see the module); then stops the finals."""
        try:
            while True:
                try:
                    await self.tick()
                except Exception:
                    # A failed tick (the database away) is logged; the next tries again.
                    log.exception("competition_tick_failed", competition=self.name)
                await asyncio.sleep(self.tick_s)
        finally:
            if self._finals is not None:
                self._finals.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._finals

    async def tick(self) -> None:
        """Reads the competition, stamps what the schedule says is due (driving),
        and applies the phase to the ladder and the finals."""
        if not self.driving and await self.writer.run(self.store.drive, self.name):
            self.driving = True
            log.info("competition_driving", competition=self.name, host=self.host_id)
            await self.writer.run(self._open)
            # The host that drove before is gone: what it was playing is cut off.
            await self.writer.run(self._cut_off, "the host driving it went away")
        state = await self.writer.run(self.store.state, self.name)
        if state is not None and self.driving:
            due = self.competition.due(state.phase, state.started, self.clock())
            if due is not None:
                with contextlib.suppress(StampError):  # an organiser's change came first
                    await self.stamp(due, "schedule", "its scheduled start came")
                state = await self.writer.run(self.store.state, self.name)
        self.state = state
        self.ladder.hold(self.phase not in LADDER_PHASES)
        if state is None or not self.driving:
            return
        if state.phase in FIELD_PHASES and state.field is None and not self._fieldless:
            try:
                await self.fix_field()
            except CompetitionError as e:
                # Registration has closed, so the field can never grow: the
                # competition ends here rather than fail at every tick.
                self._fieldless = True
                log.warning("competition_no_finals", competition=self.name, reason=str(e))
                with contextlib.suppress(StampError):  # closed already
                    await self.stamp("closed", "finals", f"no finals: {e}")
                return
        if state.phase == "finals" and state.final is None and self._finals is None:
            self._finals = asyncio.create_task(self._play_finals(), name="competition-finals")

    async def stamp(self, phase: str, who: str, reason: str) -> Stamp:
        """Records the move to ``phase`` and returns its stamp; raises StampError
        when the competition is at ``phase`` or beyond it."""
        stamp = await self.writer.run(
            self.store.stamp, self.name, phase, PHASES, self.clock(), who, reason
        )
        log.info("competition_phase", competition=self.name, phase=phase, who=who, reason=reason)
        return stamp

    async def fix_field(self) -> tuple[str, ...]:
        """Fixes the finals field (once: the field stored first stays) and returns it:
        the names the file lists, or the top K of the ladder's standings now (the
        registered bots with no rated match after them, in registration order).

        Raises CompetitionError when fewer than two bots are registered.
        """
        chosen = self.competition.finals.field
        if isinstance(chosen, int):
            _, standings = await self.ladder.standings(ALL_PLAYERS)
            ranked = [s.name for s in standings]
            # A bot with no rated ladder match yet is in no standings line; it ranks
            # after those that have one (a short ladder phase would leave none).
            registered = await self.writer.run(self.store.registered)
            ranked += [n for n in registered if n not in ranked]
            # Fewer bots than K on the ladder: they all are the field.
            if len(ranked) < 2:
                raise CompetitionError(
                    f"the finals need two finalists and {len(ranked)} bot"
                    f"{'' if len(ranked) == 1 else 's'} registered"
                )
            names = finals.field(ranked, min(chosen, len(ranked)))
        else:
            names = finals.field([], len(chosen), chosen)
        field = await self.writer.run(self.store.fix_field, self.name, names)
        log.info("competition_field", competition=self.name, field=list(field))
        return field

    async def _play_finals(self) -> None:
        try:
            await self.play(self)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("competition_finals_failed", competition=self.name)
        finally:
            self._finals = None

    # The organiser's calls

    async def advance(self, reason: str, to: str | None = None, who: str = "organiser") -> Stamp:
        """Moves the competition to phase ``to`` (None: the next) and returns the stamp;
        raises CompetitionError when there is no reason, the competition has not
        begun, or ``to`` does not come after its phase."""
        if not reason.strip():
            raise CompetitionError("a phase change needs a reason")
        state = await self.writer.run(self.store.state, self.name)
        if state is None:
            raise CompetitionError(f"competition {self.name!r} has not begun")
        current = PHASES.index(state.phase)
        if to is None:
            if current + 1 >= len(PHASES):
                raise CompetitionError("the competition is closed: no phase comes after it")
            to = PHASES[current + 1]
        try:
            stamp = await self.stamp(to, who, reason.strip())
        except StampError as e:
            raise CompetitionError(str(e)) from None
        self.state = await self.writer.run(self.store.state, self.name)
        self.ladder.hold(self.phase not in LADDER_PHASES)
        return stamp

    async def release(self, who: str = "organiser") -> bool:
        """Releases the finals' results to everyone; returns False when they were
        released already. Raises CompetitionError before the final table exists."""
        state = await self.writer.run(self.store.state, self.name)
        if state is None or state.final is None:
            raise CompetitionError(
                "the finals have no final table yet: the results are released once they end"
            )
        released = await self.writer.run(self.store.release, self.name, self.clock(), who)
        if released:
            log.info("competition_released", competition=self.name, who=who)
        self.state = await self.writer.run(self.store.state, self.name)
        return bool(released)
