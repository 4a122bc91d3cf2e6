"""Discipline on the ladder: suspended bots, voided matches, aborted matches, per-bot
quotas and quarantine (stored by ``server.db.ladder.discipline``).

- A **suspended** bot's ``Enter`` is refused (PERMISSION_DENIED with the reason), it
  is never seated, and a suspension ends its Enter stream on whichever host holds it
  (this host at once; another host of a shared database at its next tick). Its
  running match, if any, is finished by the default policy (its seat is benched:
  ``Runners.bench``) or aborted, as the operator chooses. Its line in the standings
  and its bot page say it is suspended, and why.
- A **voided** match leaves the ratings, the tallies and the counts: they are
  replayed without it (``server.db.ladder.discipline.rerate``); it stays listed, marked
  voided, with its reason.
- An **aborted** match ends as aborted and never counts (``Runner.abort``).
- **Quotas**: a bot plays at most ``matches_per_hour`` matches in any hour (the
  scheduler does not seat it meanwhile) and opens at most ``entries_per_hour`` Enter
  calls an hour (RESOURCE_EXHAUSTED beyond, naming the quota). A bot's own quota
  (``Admin.SetQuota``) replaces the server's default; 0 is no quota.
- **Quarantine**: after each match, a bot whose last ``quarantine`` finished
  matches were mostly (more than half) played by the default policy (its seat put
  on autopilot by strikes in a row: late answers, or no stream open) is suspended
  with the reason ``quarantine``, by the operator ``server``; an operator
  reinstates it.

Every change is written with its audit row in one transaction, on the ladder's
writer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import structlog

from server.db.ladder.discipline import (
    QUARANTINE,
    SERVER_OPERATOR,
    NotFoundError,
    NotVoidableError,
    Quota,
    Suspension,
)
from server.db.ladder.rows import LadderError
from server.quoting import quoted

if TYPE_CHECKING:
    from server.db.ladder.reads import LadderReader
    from server.db.ladder.store import LadderStore
    from server.db.writer import Writer
    from server.runners import Runners

    from .lobby import Lobby
    from .settling import Settling

log = structlog.get_logger()

#: A bot quarantined after this many matches mostly played by the default policy.
DEFAULT_QUARANTINE = 10

#: The scrimmages a bot may ask for in any hour, by default.
DEFAULT_SCRIMMAGES_PER_HOUR = 10

#: What a bot out of matches for the hour is told (a notice on its Enter stream).
RESTING = (
    "the bot has played its quota of matches for the hour; "
    "it is seated again once the hour has room"
)

__all__ = [
    "DEFAULT_QUARANTINE",
    "QUARANTINE",
    "Bounds",
    "Discipline",
    "NotFoundError",
    "NotVoidableError",
    "QuotaError",
    "SuspendedError",
]


@dataclass(frozen=True, slots=True)
class Bounds:
    """The server's defaults: matches a bot plays per hour, Enter calls it makes per
    hour (0: no quota), the matches quarantine looks back over (0: off), and the
    scrimmages a bot may ask for per hour (0: no quota; ``server.ladder.scrimmage``)."""

    matches_per_hour: int = 0
    entries_per_hour: int = 0
    quarantine: int = DEFAULT_QUARANTINE
    scrimmages_per_hour: int = DEFAULT_SCRIMMAGES_PER_HOUR


class SuspendedError(LadderError):
    """The bot is suspended (the message gives the reason)."""


class QuotaError(LadderError):
    """The bot has used a quota (the message names it)."""


@dataclass(frozen=True, slots=True)
class Suspended:
    """What a suspension did: whether the bot was in good standing before, and the
    running match it held (and whether it was aborted, else benched), if any; a match
    another host runs is benched there (``elsewhere`` names that host)."""

    new: bool
    match_id: str | None = None
    aborted: bool = False
    elsewhere: str = ""  # the address of the host that runs the match, when another


def refusal(name: str, suspension: Suspension) -> str:
    """Returns what a suspended bot is told."""
    return f"bot {quoted(name)} is suspended: {suspension.reason}" + (
        " (too many of its last matches were played by the default policy; "
        "an operator reinstates it)"
        if suspension.reason == QUARANTINE
        else ""
    )


class Governed(Protocol):
    """What discipline needs of the ladder (``server.ladder.ladder.Ladder``)."""

    store: LadderStore
    writer: Writer
    reader: LadderReader
    settling: Settling
    lobby: Lobby

    def changed(self) -> None:
        """Marks the standings read so far stale."""
        ...


class Discipline:
    """The discipline of one ladder (see the module); ``runners`` are the server's
    matches (None: a ladder whose matches are not the server's, in tests)."""

    def __init__(
        self,
        ladder: Governed,
        bounds: Bounds,
        runners: Runners | None,
        clock: Callable[[], float],
    ) -> None:
        self.ladder = ladder
        self.bounds = bounds
        self.runners = runners
        self.clock = clock
        # The seats benched here, by (match, seat): each is benched once.
        self._benched: set[tuple[str, int]] = set()

    # Checks

    async def admit(self, name: str) -> None:
        """Raises SuspendedError for a suspended bot, QuotaError once it has used its
        Enter calls of the hour; else counts this one."""
        store = self.ladder.store
        suspension = store.suspension(name)  # one row, on the loop
        if suspension is not None:
            raise SuspendedError(refusal(name, suspension))
        spent = await self.ladder.writer.run(
            store.count_entry, name, self.clock(), self.bounds.entries_per_hour
        )
        if spent is not None:
            raise QuotaError(
                f"bot {quoted(name)} has used its quota of entries: {spent} Enter calls an "
                "hour; enter again within the hour's quota, or ask the organiser"
            )

    def benched(self, names: Sequence[str]) -> set[str]:
        """Returns those of ``names`` not to seat now: suspended, or out of matches for
        the hour (a row each, on the loop); tells the latter why they wait."""
        store = self.ladder.store
        spent = store.spent(names, self.clock(), self.bounds.matches_per_hour)
        self.ladder.lobby.rest(spent, RESTING)
        return spent | set(store.suspended(names))

    async def after_match(self, names: Sequence[str]) -> list[str]:
        """Quarantines those of a finished match's bots that qualify (see the module);
        returns them, their Enter streams here ended."""
        if self.bounds.quarantine <= 0:
            return []
        quarantined = await self.ladder.writer.run(
            self.ladder.store.quarantine, list(names), self.bounds.quarantine, self.clock()
        )
        for name in quarantined:
            log.warning(
                "ladder_bot_quarantined",
                bot=name,
                matches=self.bounds.quarantine,
                operator=SERVER_OPERATOR,
            )
            self._changed()
            suspension = Suspension(QUARANTINE, self.clock(), SERVER_OPERATOR)
            self.ladder.lobby.suspend(name, refusal(name, suspension))
        return quarantined

    async def obey(self) -> None:
        """Does what was asked through other hosts of a shared database of the ladder
        matches this host runs: aborts those an operator aborted there
        (``LadderStore.ask_abort``), and hands to the default policy the seats of
        suspended bots. For every beat, on the loop (a row per match and per bot)."""
        if self.runners is None:
            return
        ladder = [r for r in self.runners.running if r.match.settings.ladder]
        asked = self.ladder.store.aborts_asked([r.id for r in ladder])
        for match_id, why in asked.items():
            if self._abort_here(match_id, why):
                log.info("ladder_match_aborted_as_asked", match=match_id, reason=why)
        seats = {
            (runner.id, seat): name
            for runner in ladder
            if runner.id not in asked
            for seat, name in enumerate(runner.match.names)
            if (runner.id, seat) not in self._benched
        }
        if not seats:
            return
        suspended = self.ladder.store.suspended(sorted(set(seats.values())))  # a row each
        for (match_id, seat), name in seats.items():
            if name in suspended and self.runners.bench(match_id, seat):
                self._benched.add((match_id, seat))
                log.info("ladder_seat_benched", match=match_id, seat=seat, bot=name)
        running = {runner.id for runner in self.runners.running}
        self._benched = {(m, s) for m, s in self._benched if m in running}

    # An operator's changes

    async def suspend(self, name: str, reason: str, operator: str, *, abort: bool) -> Suspended:
        """Suspends the bot: ends its Enter stream, and finishes its running match by
        the default policy, or aborts it (``abort``). Raises NotFoundError for a bot
        not registered, LadderError for an empty reason."""
        _reason(reason)
        store = self.ladder.store
        new = await self.ladder.writer.run(store.suspend, name, reason, operator, self.clock())
        self._changed()
        self.ladder.lobby.suspend(name, refusal(name, Suspension(reason, self.clock(), operator)))
        seated = store.seats([name]).get(name)  # one row, on the loop
        done = Suspended(new)
        if seated is not None and self.runners is not None:
            why = f"{name} was suspended by {operator}: {reason}"
            if abort and self._abort_here(seated.match_id, why):
                done = Suspended(new, seated.match_id, aborted=True)
            elif self.runners.bench(seated.match_id, seated.seat):
                self._benched.add((seated.match_id, seated.seat))
                done = Suspended(new, seated.match_id)
            elif seated.host and self.runners.get(seated.match_id) is None:
                # Another host runs it: it benches the seat, or aborts the match as
                # asked, within a beat (``obey``).
                asked = abort and await self.ladder.writer.run(
                    store.ask_abort, seated.match_id, why
                )
                done = Suspended(new, seated.match_id, bool(asked), seated.address or seated.host)
        log.info(
            "ladder_bot_suspended",
            bot=name,
            operator=operator,
            reason=reason,
            match=done.match_id,
            aborted=done.aborted,
        )
        return done

    async def reinstate(self, name: str, reason: str, operator: str) -> bool:
        """Lifts the bot's suspension; returns False when it was not suspended. Raises
        NotFoundError for a bot not registered."""
        _reason(reason)
        store = self.ladder.store
        was = await self.ladder.writer.run(store.reinstate, name, reason, operator, self.clock())
        self._changed()
        log.info("ladder_bot_reinstated", bot=name, operator=operator, reason=reason)
        return was

    async def void(self, match_id: str, reason: str, operator: str) -> bool:
        """Voids a finished ladder match (its ratings, tallies and counts replayed
        without it); returns False when it was voided already. Raises NotFoundError,
        NotVoidableError (not finished)."""
        _reason(reason)
        store = self.ladder.store
        new = await self.ladder.settling.stored(
            match_id, store.void_match, match_id, reason, operator, self.clock()
        )
        self._changed()
        if new and self.runners is not None and self.runners.metrics is not None:
            self.runners.metrics.match_voided()
        log.info("ladder_match_voided", match=match_id, operator=operator, reason=reason, new=new)
        return new

    async def abort(self, match_id: str, reason: str, operator: str) -> str:
        """Aborts a running match (a ladder match, or an organiser's): it ends as
        aborted and never counts. A ladder match another host of a shared database
        runs is aborted by that host within a beat (``obey``); returns its address
        then, else "". Raises NotFoundError (no such match running)."""
        _reason(reason)
        why = f"aborted by {operator}: {reason}"
        if self._abort_here(match_id, why):
            log.info("match_aborted_by_operator", match=match_id, operator=operator, reason=reason)
            return ""
        store = self.ladder.store
        host = store.host_of(match_id)  # one row, on the loop
        if host is not None and await self.ladder.writer.run(store.ask_abort, match_id, why):
            log.info(
                "match_abort_asked", match=match_id, host=host[0], operator=operator, reason=reason
            )
            return host[1] or host[0]
        raise NotFoundError(f"match {quoted(match_id)} is not running")

    async def set_quota(
        self,
        name: str,
        per_hour: int | None,
        entries: int | None,
        reason: str,
        operator: str,
    ) -> Quota:
        """Sets the bot's own quotas (None: the server's default, 0: none); returns
        the quotas it had. Raises NotFoundError, LadderError (a negative quota)."""
        _reason(reason)
        before = await self.ladder.writer.run(
            self.ladder.store.set_quota, name, per_hour, entries, reason, operator, self.clock()
        )
        self.ladder.lobby.wake()
        log.info(
            "ladder_quota_set",
            bot=name,
            per_hour=per_hour,
            entries=entries,
            operator=operator,
            reason=reason,
        )
        return before

    def _abort_here(self, match_id: str, why: str) -> bool:
        runner = self.runners.get(match_id) if self.runners is not None else None
        if runner is None or runner.ended:
            return False
        runner.abort(why)
        return True

    def _changed(self) -> None:
        # The standings say who is suspended, and a void changes the ratings: the
        # standings read before are stale.
        self.ladder.changed()


def _reason(reason: str) -> None:
    if not reason.strip():
        raise LadderError("a reason is required")
