"""The server's switches as one host obeys them: the ladder paused, registration
closed.

A switch lives in the database (``server.db.admin``), so every host sharing a
PostgreSQL database obeys the same switches. This host applies a change made
through it at once, and reads them every ``poll`` seconds for the changes made
through others. The pause holds the lobby (no table forms; the matches running
finish) and tells the bots entered here why they wait; a scheduling pass on a
shared database also reads it in its own transaction (``LadderStore.take``), so no
host forms a table once the pause is written. Registration is read afresh at each
Register, on whichever host takes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Final

import structlog

from ..audit import Audit
from ..db.admin import LADDER_PAUSED, REGISTRATION_CLOSED, SwitchRow
from ..ladder.ladder import Ladder

log = structlog.get_logger()

#: How often each host reads the switches (seconds).
POLL_S: Final = 0.5
#: What holds the lobby while the ladder is paused (``Ladder.hold``).
PAUSE: Final = "pause"
RESUMED: Final = "the ladder has resumed"


def paused_notice(reason: str) -> str:
    """Returns what a waiting bot is told while the ladder is paused for ``reason``."""
    return f"the ladder is paused: {reason}"


def closed_message(reason: str) -> str:
    """Returns the refusal of a Register while an operator has closed registration."""
    return f"registration is closed: {reason}"


class Switches:
    """This host's view of the server's switches, applied to its ladder."""

    def __init__(self, audit: Audit, ladder: Ladder, *, poll: float = POLL_S) -> None:
        self.audit = audit
        self.ladder = ladder
        self.poll = poll
        self.paused: SwitchRow | None = None  # as last applied; None while not paused

    def apply(self, switches: Mapping[str, SwitchRow]) -> None:
        """Holds or frees the lobby as the pause says, and tells the bots entered here
        when it changed (paused, paused for another reason, resumed)."""
        paused = switches[LADDER_PAUSED]
        was = self.paused
        self.paused = paused if paused.on else None
        if paused.on != (was is not None):
            # Only on a change: freeing the lobby wakes its scheduler.
            self.ladder.hold(paused.on, by=PAUSE)
        if paused.on and (was is None or was.reason != paused.reason):
            notice = paused_notice(paused.reason)
            self.ladder.notify(notice, notice)
            log.info("ladder_paused", operator=paused.operator, reason=paused.reason)
        elif not paused.on and was is not None:
            self.ladder.notify(None, RESUMED)
            log.info("ladder_resumed")

    def recover(self) -> None:
        """Start-up, before serving (on the calling thread): applies the switches as
        the database holds them (a pause outlives a restart)."""
        self.apply(self.audit.store.switches())

    async def run(self) -> None:
        """Reads and applies the switches every ``poll`` seconds until cancelled."""
        while True:
            try:
                self.apply(await self.audit.switches())
            except Exception:
                # A failed read (the database away) is logged; the next tries again.
                log.exception("switches_read_failed")
            await asyncio.sleep(self.poll)

    async def turn(
        self, name: str, on: bool, operator: str, reason: str, action: str
    ) -> tuple[bool, dict[str, SwitchRow]]:
        """Turns switch ``name`` as ``operator`` for ``reason`` (audited as
        ``action``), applies it here at once, and returns whether it changed and
        every switch after."""
        changed = await self.audit.turn(name, on, operator, reason, action)
        switches = await self.audit.switches()
        self.apply(switches)
        return changed, switches

    async def registration_closed(self) -> str | None:
        """Returns why an operator has closed registration, or None while it is open
        (read afresh: another host may have turned it). One of the ladder's
        registration checks (``Ladder.registration_checks``)."""
        row = await self.audit.switch(REGISTRATION_CLOSED)
        return closed_message(row.reason) if row.on else None
