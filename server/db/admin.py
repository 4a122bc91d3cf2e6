"""The audit trail and the server's switches, read and written (revision 0009).

:class:`AdminStore` appends to ``audit`` (never updating or deleting a row: nothing
here does) and reads it in order, a page at a time; and it keeps ``switches``, the
server-wide switches an operator turns (``ladder_paused``, ``registration_closed``),
each change of a switch written with its audit entry in one transaction. Every
method is one short transaction; the server calls them on its admin writer thread
(``server.audit``). On PostgreSQL every host reads the same rows, so a switch
turned through one host holds on all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from . import schema
from .connection import LADDER_LOCK, Connection, connect, transaction

#: The switches the server knows, in the order they are listed.
LADDER_PAUSED: Final = "ladder_paused"
REGISTRATION_CLOSED: Final = "registration_closed"
SWITCHES: Final = (LADDER_PAUSED, REGISTRATION_CLOSED)

ON: Final = "on"
OFF: Final = "off"


@dataclass(frozen=True, slots=True)
class AuditRow:
    """One change: its place in the trail, when (UNIX seconds), who, what, on what,
    why, and the details (a JSON object)."""

    seq: int
    at: float
    operator: str
    action: str
    target: str
    reason: str
    detail: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SwitchRow:
    """A switch as last turned: on or off, by whom, when and why (no one yet: off,
    with an empty operator and reason, at 0)."""

    name: str
    on: bool = False
    operator: str = ""
    reason: str = ""
    at: float = 0.0


class AdminStore:
    """One database's audit trail and switches (an SQLite file or a ``postgresql://``
    URL). Raises SchemaError when the database cannot be brought to this server's
    schema, and what ``server.db.connection.ERRORS`` names when it cannot be reached."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        schema.upgrade(self.path)
        self._db = connect(self.path)

    def close(self) -> None:
        """Closes the connection."""
        self._db.close()

    @staticmethod
    def _append(
        db: Connection,
        at: float,
        operator: str,
        action: str,
        target: str,
        reason: str,
        detail: Mapping[str, Any],
    ) -> int:
        row = db.execute(
            "INSERT INTO audit (at, operator, action, target, reason, detail)"
            " VALUES (?, ?, ?, ?, ?, ?) RETURNING seq",
            (at, operator, action, target, reason, json.dumps(dict(detail), sort_keys=True)),
        ).fetchone()
        return int(row[0])

    def append(
        self,
        at: float,
        operator: str,
        action: str,
        target: str,
        reason: str,
        detail: Mapping[str, Any] | None = None,
    ) -> int:
        """Appends one change to the audit trail; returns its place (seq)."""
        with transaction(self._db) as db:
            return self._append(db, at, operator, action, target, reason, detail or {})

    def entries(self, after: int, limit: int) -> list[AuditRow]:
        """Returns at most ``limit`` entries of the trail after place ``after``
        (0: from the start), oldest first."""
        rows = self._db.execute(
            "SELECT seq, at, operator, action, target, reason, detail FROM audit"
            " WHERE seq > ? ORDER BY seq LIMIT ?",
            (after, limit),
        ).fetchall()
        return [AuditRow(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6])) for r in rows]

    def switches(self) -> dict[str, SwitchRow]:
        """Returns every switch the server knows, by name (off when never turned)."""
        found = {name: SwitchRow(name) for name in SWITCHES}
        for name, value, at, operator, reason in self._db.execute(
            "SELECT name, value, at, operator, reason FROM switches"
        ).fetchall():
            if name in found:
                found[name] = SwitchRow(name, value == ON, operator, reason, at)
        return found

    def switch(self, name: str) -> SwitchRow:
        """Returns the switch ``name`` as last turned."""
        row = self._db.execute(
            "SELECT value, at, operator, reason FROM switches WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            return SwitchRow(name)
        return SwitchRow(name, row[0] == ON, row[2], row[3], row[1])

    def turn(
        self,
        name: str,
        on: bool,
        at: float,
        operator: str,
        reason: str,
        action: str,
        detail: Mapping[str, Any] | None = None,
    ) -> bool:
        """Turns the switch ``name`` on or off and appends ``action`` to the audit
        trail, in one transaction; returns False (changing nothing, appending nothing)
        when it is off and asked to be off. Turning on a switch that is on changes who
        turned it and why (and is audited). The ladder's pause is turned under the
        ladder's lock, which the scheduling passes of every host take: a pass after
        it forms nothing."""
        with transaction(self._db, LADDER_LOCK if name == LADDER_PAUSED else None) as db:
            row = db.execute("SELECT value FROM switches WHERE name = ?", (name,)).fetchone()
            was_on = row is not None and row[0] == ON
            if not on and not was_on:
                return False
            db.execute("DELETE FROM switches WHERE name = ?", (name,))
            db.execute(
                "INSERT INTO switches (name, value, at, operator, reason) VALUES (?, ?, ?, ?, ?)",
                (name, ON if on else OFF, at, operator, reason),
            )
            self._append(db, at, operator, action, name, reason, detail or {})
        return True
