"""The audit trail as the services use it: every change an operator makes, appended.

One :class:`Audit` per server, over the database's audit table
(``server.db.admin``), with a writer thread of its own so that the event loop never
waits for the disk. The Organiser, Competition and Admin services call
:meth:`Audit.record` (awaited: the change is on the trail before the call is
answered) or :meth:`Audit.send` (queued in order, for the calls that create
matches, which are not slowed by it); nothing here updates or deletes an entry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import structlog

from .db.admin import AdminStore, AuditRow, SwitchRow
from .db.writer import Writer

log = structlog.get_logger()

#: Longest reason an operator may give.
MAX_REASON: Final = 500


class ReasonError(ValueError):
    """A change without a reason, or with one too long (the message says which)."""


def reason_of(text: str, call: str) -> str:
    """Returns ``text`` stripped; raises ReasonError when it is empty or longer than
    MAX_REASON characters (``call`` names the call in the message)."""
    reason = text.strip()
    if not reason:
        raise ReasonError(f"{call} needs a reason")
    if len(reason) > MAX_REASON:
        raise ReasonError(f"the reason has {len(reason)} characters; at most {MAX_REASON}")
    return reason


class Audit:
    """The server's audit trail and switches (see the module)."""

    def __init__(self, store: AdminStore, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        self.writer = Writer("admin-writer")

    def close(self) -> None:
        """Closes the store once every queued write is done."""
        self.writer.close()
        self.store.close()

    async def record(
        self,
        operator: str,
        action: str,
        target: str = "",
        reason: str = "",
        detail: Mapping[str, Any] | None = None,
    ) -> int:
        """Appends one change and returns its place, once written."""
        seq = await self.writer.run(
            self.store.append, self.clock(), operator, action, target, reason, detail
        )
        log.info("audited", operator=operator, action=action, target=target, reason=reason)
        return seq

    def send(
        self,
        operator: str,
        action: str,
        target: str = "",
        reason: str = "",
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        """Queues one change to be appended, in order with every other (a failure is
        logged by the writer)."""
        self.writer.send(self.store.append, self.clock(), operator, action, target, reason, detail)
        log.info("audited", operator=operator, action=action, target=target, reason=reason)

    async def entries(self, after: int, limit: int) -> list[AuditRow]:
        """Returns at most ``limit`` entries after place ``after``, oldest first, every
        change queued before the call included."""
        return await self.writer.run(self.store.entries, after, limit)

    async def switches(self) -> dict[str, SwitchRow]:
        """Returns the server's switches, by name."""
        return await self.writer.run(self.store.switches)

    async def switch(self, name: str) -> SwitchRow:
        """Returns the switch ``name`` as last turned (read afresh: another host may
        have turned it)."""
        return await self.writer.run(self.store.switch, name)

    async def turn(
        self,
        name: str,
        on: bool,
        operator: str,
        reason: str,
        action: str,
        detail: Mapping[str, Any] | None = None,
    ) -> bool:
        """Turns a switch and appends ``action`` in one transaction; returns False
        when it was off already and asked to be off (nothing is appended)."""
        changed = await self.writer.run(
            self.store.turn, name, on, self.clock(), operator, reason, action, detail
        )
        if changed:
            log.info("switch_turned", switch=name, on=on, operator=operator, reason=reason)
        return changed
