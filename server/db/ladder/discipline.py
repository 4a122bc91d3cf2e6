"""Discipline on the ladder, stored: suspended bots, voided matches, per-bot quotas and
the seats the default policy played (``server.ladder.discipline`` decides; this module
reads and writes).

Every change here is one transaction of the ladder's writer (under the ladder's lock
on PostgreSQL, as every other ladder write), and the audit row that says who made it
and why commits with it: a change is never stored without its reason, nor a reason
without its change. Other hosts of a shared database see a change at their next read.

A void replays the ratings: they are a pure function of the rated results in finish
order (``server.ladder.ratings``), so leaving one result out means replaying every
result without it. The tallies, totals and seat positions are counted afresh in the
same transaction, so that ``mammamia ladder rerate`` agrees with them as it did.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from ...quoting import quoted
from ...status import MatchStatus
from ..connection import Connection, among
from .leagues import reset as reset_leagues
from .rating import apply_next
from .rows import LadderError

#: The operator the server itself acts as (quarantine).
SERVER_OPERATOR = "server"

#: The reason a bot quarantined by the server is suspended with.
QUARANTINE = "quarantine"

#: The window of the quotas (seconds).
HOUR_S = 3600.0


class NotFoundError(LadderError):
    """No such bot or ladder match."""


class NotVoidableError(LadderError):
    """The match has not finished (running, or aborted: it never counted)."""


@dataclass(frozen=True, slots=True)
class Suspension:
    """Why a bot is suspended (``reason``; ``quarantine`` when the server did it),
    since when (UNIX time) and by which operator."""

    reason: str
    at: float
    by: str


@dataclass(frozen=True, slots=True)
class Quota:
    """A bot's quotas: matches per hour and Enter calls per hour; None is the
    server's default."""

    per_hour: int | None
    entries: int | None


def audit(
    db: Connection,
    at: float,
    operator: str,
    action: str,
    target: str,
    reason: str,
    **detail: object,
) -> None:
    """Appends one row to the audit trail, in the caller's transaction."""
    db.execute(
        "INSERT INTO audit (at, operator, action, target, reason, detail)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (at, operator, action, target, reason, json.dumps(detail, sort_keys=True)),
    )


def suspensions(db: Connection, names: Sequence[str]) -> dict[str, Suspension]:
    """Returns the suspension of each of ``names`` that is suspended."""
    if not names:
        return {}
    test, listed = among(db, names)
    rows = db.execute(
        "SELECT name, suspended, suspended_at, suspended_by FROM ladder_bots"
        f" WHERE suspended IS NOT NULL AND name {test}",
        (listed,),
    ).fetchall()
    return {n: Suspension(r, float(a or 0.0), b or "") for n, r, a, b in rows}


def spent(db: Connection, names: Sequence[str], now: float, default: int) -> set[str]:
    """Returns those of ``names`` that have used their matches of the hour before
    ``now`` (their own quota, or ``default`` when they have none; 0: no quota)."""
    if not names:
        return set()
    test, listed = among(db, names)
    rows = db.execute(
        "SELECT b.name, b.quota_per_hour, (SELECT COUNT(*) FROM ladder_results r"
        " WHERE r.name = b.name AND r.created >= ?) FROM ladder_bots b"
        f" WHERE b.name {test} AND COALESCE(b.quota_per_hour, ?) > 0",
        (now - HOUR_S, listed, default),
    ).fetchall()
    return {n for n, own, played in rows if played >= (own if own is not None else default)}


def benched(db: Connection, names: Sequence[str], now: float, default: int) -> set[str]:
    """Returns those of ``names`` the scheduler must not seat now: suspended, or out
    of matches for the hour."""
    return set(suspensions(db, names)) | spent(db, names, now, default)


class Discipline:
    """The discipline writes and reads of :class:`~server.db.ladder.store.LadderStore`
    (which gives the connections and the write transaction)."""

    _db: Connection
    _writes: Connection

    def _write(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    # Suspension

    def suspend(self, name: str, reason: str, operator: str, now: float) -> bool:
        """Suspends the bot ``name`` for ``reason`` (a suspended bot's reason is
        replaced); returns False when it was suspended already (the reason is then
        updated all the same). Raises NotFoundError for a name not registered."""
        with self._write() as db:
            row = db.execute("SELECT suspended FROM ladder_bots WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise NotFoundError(f"bot {quoted(name)} is not registered")
            db.execute(
                "UPDATE ladder_bots SET suspended = ?, suspended_at = ?, suspended_by = ?"
                " WHERE name = ?",
                (reason, now, operator, name),
            )
            audit(db, now, operator, "bot.suspend", name, reason)
        return row[0] is None

    def reinstate(self, name: str, reason: str, operator: str, now: float) -> bool:
        """Lifts the bot's suspension; returns False (changing nothing but the audit
        trail) when it was not suspended. Raises NotFoundError for a name not
        registered."""
        with self._write() as db:
            row = db.execute("SELECT suspended FROM ladder_bots WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise NotFoundError(f"bot {quoted(name)} is not registered")
            db.execute(
                "UPDATE ladder_bots SET suspended = NULL, suspended_at = NULL,"
                " suspended_by = NULL WHERE name = ?",
                (name,),
            )
            audit(db, now, operator, "bot.reinstate", name, reason, was=row[0])
        return row[0] is not None

    # Quarantine

    def quarantine(self, names: Sequence[str], last: int, now: float) -> list[str]:
        """Suspends, with the reason ``quarantine`` and as the operator ``server``,
        each of ``names`` in good standing whose ``last`` finished, counted matches
        were mostly (more than half) played by the default policy; returns them."""
        out: list[str] = []
        if last <= 0:
            return out
        with self._write() as db:
            good = [n for n in names if n not in suspensions(db, names)]
            for name in good:
                rows = db.execute(
                    "SELECT r.autopilot FROM ladder_results r"
                    " JOIN ladder_matches m ON m.match_id = r.match_id"
                    " WHERE r.name = ? AND m.status = 'finished' AND m.voided IS NULL"
                    " ORDER BY m.finish_order DESC LIMIT ?",
                    (name, last),
                ).fetchall()
                defaulted = sum(1 for (a,) in rows if a)
                if len(rows) < last or 2 * defaulted <= last:
                    continue
                db.execute(
                    "UPDATE ladder_bots SET suspended = ?, suspended_at = ?, suspended_by = ?"
                    " WHERE name = ?",
                    (QUARANTINE, now, SERVER_OPERATOR, name),
                )
                audit(
                    db,
                    now,
                    SERVER_OPERATOR,
                    "bot.suspend",
                    name,
                    QUARANTINE,
                    defaulted=defaulted,
                    matches=last,
                )
                out.append(name)
        return out

    # Voids

    def void_match(self, match_id: str, reason: str, operator: str, now: float) -> bool:
        """Voids a finished match: it leaves the ratings, tallies and counts (all
        replayed without it, in this one transaction). Returns False when it was
        voided already (changing nothing). Raises NotFoundError for a match that is
        not a ladder match, NotVoidableError for one that has not finished."""
        with self._write() as db:
            row = db.execute(
                "SELECT status, voided FROM ladder_matches WHERE match_id = ?", (match_id,)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"match {quoted(match_id)} is not a ladder match")
            if row[0] != MatchStatus.FINISHED:
                raise NotVoidableError(
                    f"match {quoted(match_id)} is {row[0]}: only a finished match can be voided"
                    + (" (abort a running one)" if row[0] == MatchStatus.RUNNING else "")
                )
            if row[1] is not None:
                return False
            db.execute(
                "UPDATE ladder_matches SET voided = ?, voided_by = ?, void_reason = ?,"
                " rated = 0 WHERE match_id = ?",
                (now, operator, reason, match_id),
            )
            replayed = rerate(db)
            audit(db, now, operator, "match.void", match_id, reason, replayed=replayed)
        return True

    # Quotas

    def set_quota(
        self,
        name: str,
        per_hour: int | None,
        entries: int | None,
        reason: str,
        operator: str,
        now: float,
    ) -> Quota:
        """Sets the bot's quotas (None: the server's default; 0: none) and returns
        them as they were. Raises NotFoundError for a name not registered, LadderError
        for a negative quota."""
        for value in (per_hour, entries):
            if value is not None and value < 0:
                raise LadderError(f"a quota is 0 (no limit) or more, not {value}")
        with self._write() as db:
            row = db.execute(
                "SELECT quota_per_hour, quota_entries FROM ladder_bots WHERE name = ?", (name,)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"bot {quoted(name)} is not registered")
            db.execute(
                "UPDATE ladder_bots SET quota_per_hour = ?, quota_entries = ? WHERE name = ?",
                (per_hour, entries, name),
            )
            audit(db, now, operator, "bot.quota", name, reason, per_hour=per_hour, entries=entries)
        return Quota(row[0], row[1])

    def quota(self, name: str) -> Quota | None:
        """Returns the bot's own quotas, or None for a name not registered."""
        row = self._db.execute(
            "SELECT quota_per_hour, quota_entries FROM ladder_bots WHERE name = ?", (name,)
        ).fetchone()
        return None if row is None else Quota(row[0], row[1])

    def count_entry(self, name: str, now: float, default: int) -> int | None:
        """Counts one Enter call of ``name`` in its current hour (a new hour begins an
        hour after the last began); returns the quota it passed (its own, or
        ``default``), or None when it is within it (0: no quota), counting it only
        then."""
        with self._write() as db:
            row = db.execute(
                "SELECT quota_entries, entries_since, entries FROM ladder_bots WHERE name = ?",
                (name,),
            ).fetchone()
            if row is None:
                return None
            quota = row[0] if row[0] is not None else default
            since, count = row[1], int(row[2] or 0)
            if since is None or since <= now - HOUR_S:
                since, count = now, 0
            if quota and count >= quota:
                return int(quota)
            db.execute(
                "UPDATE ladder_bots SET entries_since = ?, entries = ? WHERE name = ?",
                (since, count + 1, name),
            )
        return None

    def ask_abort(self, match_id: str, why: str) -> bool:
        """Asks the host that runs a ladder match to abort it for ``why`` (read by
        :meth:`aborts_asked`); returns False when the match is not running."""
        with self._write() as db:
            cur = db.execute(
                "UPDATE ladder_matches SET abort_asked = ? WHERE match_id = ?"
                " AND status = 'running'",
                (why, match_id),
            )
            return cur.rowcount == 1

    def aborts_asked(self, match_ids: Sequence[str]) -> dict[str, str]:
        """Returns why an abort was asked of each of ``match_ids`` still running that
        has one (:meth:`ask_abort`)."""
        if not match_ids:
            return {}
        test, listed = among(self._db, match_ids)
        rows = self._db.execute(
            "SELECT match_id, abort_asked FROM ladder_matches WHERE abort_asked IS NOT NULL"
            f" AND status = 'running' AND match_id {test}",
            (listed,),
        ).fetchall()
        return {m: why for m, why in rows}

    def host_of(self, match_id: str) -> tuple[str, str] | None:
        """Returns (host, address) of the host that runs or ran a ladder match, or
        None (not a ladder match, or run before hosts were named)."""
        row = self._db.execute(
            "SELECT host, address FROM ladder_matches WHERE match_id = ?", (match_id,)
        ).fetchone()
        return None if row is None or row[0] is None else (row[0], row[1] or "")

    def benched(self, names: Sequence[str], now: float, default: int) -> set[str]:
        """Returns those of ``names`` the scheduler must not seat (:func:`benched`)."""
        return benched(self._db, names, now, default)


def rerate(db: Connection) -> int:
    """Replays every finished, counted result in finish order from the initial
    ratings, in the caller's transaction: the ratings, tallies, totals and seat
    positions are counted afresh, and with leagues on, every bot starts again in the
    lowest league and moves as the results are replayed; returns how many results
    were rated."""
    for table in ("ladder_ratings", "ladder_tallies", "ladder_totals", "ladder_positions"):
        db.execute(f"DELETE FROM {table}")
    db.execute("UPDATE ladder_matches SET rated = 0 WHERE rated = 1")
    reset_leagues(db)  # the moves are replayed with the ratings
    replayed = 0
    while apply_next(db):
        replayed += 1
    return replayed
