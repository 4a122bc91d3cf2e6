"""The hosts of a shared PostgreSQL database: their leases, and the takeover of the
unfinished matches of a host whose lease has lapsed (``server.leases`` runs them).

Each host has a row in ``hosts`` (its host id, the address it advertises, when its
lease runs out), renewed every beat. A lease that has lapsed means the host is gone
and not restarting: one live host then takes over its unfinished matches, in one
transaction that first locks the lapsed host's row (``FOR UPDATE SKIP LOCKED``, so
two hosts never take the same host's matches), checks the lease is still lapsed,
and moves the matches' rows (``matches``, their journal's ``match_setups``, the
ladder's ``ladder_matches`` with the address its bots are sent to) to itself.

A host that comes back after that finds nothing of its own left to resume, and its
writes for the matches it no longer holds are refused (the fencing is where those
writes are: ``TableJournal`` and ``Storage.end_match`` check the match's host).

Times are the callers' clock (seconds since the epoch); the hosts' clocks must
agree to well within a lease (NTP does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .connection import POSTGRESQL, Connection, Cursor, connect, dialect, now_iso, transaction

#: The statuses of a match that has not ended (in ``matches``).
_UNFINISHED = "('waiting', 'running')"


@dataclass(frozen=True, slots=True)
class HostRow:
    """One host as ``mammamia hosts list`` shows it."""

    host: str
    address: str
    #: When its lease runs out (0: released by hand).
    expires: float
    #: When it last renewed its lease.
    renewed: float
    #: Its matches that have not ended (as ``matches`` records them).
    unfinished: int

    def live(self, now: float) -> bool:
        """Returns whether the lease still runs at ``now``."""
        return self.expires > now


@dataclass(frozen=True, slots=True)
class Taken:
    """The unfinished matches one host took over from another."""

    #: The host whose lease had lapsed.
    host: str
    #: The matches journalled (``match_setups``): the taker resumes them.
    journalled: tuple[str, ...]
    #: Every unfinished match (``matches``), journalled or not.
    unfinished: tuple[str, ...]
    #: The running ladder matches (``ladder_matches``).
    ladder: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.journalled or self.unfinished or self.ladder)


class HostRefusedError(RuntimeError):
    """A host cannot be released as asked (the message says why)."""


class Hosts:
    """The ``hosts`` table and the takeover, through a connection of its own (for one
    thread: the server's writer thread, or a command's)."""

    def __init__(self, target: str | Path) -> None:
        self._db: Connection = connect(target)
        self._postgresql = dialect(self._db) == POSTGRESQL

    def close(self) -> None:
        self._db.close()

    def renew(self, host: str, address: str, now: float, lease: float) -> bool:
        """Renews ``host``'s lease until ``now + lease``; returns False (renewing
        nothing) when its lease was released by hand (``release``), which only a
        :meth:`start` lifts."""
        with transaction(self._db) as db:
            cur = db.execute(
                "UPDATE hosts SET address = ?, expires = ?, renewed = ? WHERE host = ?"
                " AND expires > 0",
                (address, now + lease, now, host),
            )
            if cur.rowcount:
                return True
            (released,) = db.execute(
                "SELECT COUNT(*) FROM hosts WHERE host = ?", (host,)
            ).fetchone()
            if released:
                return False
            self._insert(db, host, address, now, lease)
            return True

    def start(self, host: str, address: str, now: float, lease: float) -> None:
        """Takes ``host``'s lease at start-up, whatever became of the last one: before
        the host resumes its own matches, so that no other host takes them over while
        it does (the takeover locks this row and finds the lease live)."""
        with transaction(self._db) as db:
            self._insert(db, host, address, now, lease)

    @staticmethod
    def _insert(db: Connection, host: str, address: str, now: float, lease: float) -> None:
        db.execute(
            "INSERT INTO hosts (host, address, expires, renewed) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (host) DO UPDATE SET address = excluded.address,"
            " expires = excluded.expires, renewed = excluded.renewed",
            (host, address, now + lease, now),
        )

    def lapsed(self, now: float, me: str) -> list[str]:
        """Returns the hosts other than ``me`` whose lease has lapsed at ``now`` and
        that still hold unfinished matches, longest lapsed first."""
        rows = self._db.execute(
            "SELECT h.host FROM hosts h WHERE h.expires <= ? AND h.host <> ? AND ("
            f"EXISTS (SELECT 1 FROM matches m WHERE m.host = h.host AND m.status IN {_UNFINISHED})"
            " OR EXISTS (SELECT 1 FROM match_setups s WHERE s.host = h.host)"
            " OR EXISTS (SELECT 1 FROM ladder_matches l WHERE l.host = h.host"
            " AND l.status = 'running')) ORDER BY h.expires",
            (now, me),
        ).fetchall()
        return [r[0] for r in rows]

    def take_over(self, me: str, address: str, host: str, now: float) -> Taken:
        """Returns the unfinished matches of ``host`` that ``me`` (advertising
        ``address``) took over: none when ``host``'s lease runs at ``now``, or another
        host is taking them at this moment (its row is locked)."""
        skip = " FOR UPDATE SKIP LOCKED" if self._postgresql else ""
        with transaction(self._db) as db:
            row = db.execute(f"SELECT expires FROM hosts WHERE host = ?{skip}", (host,)).fetchone()
            if row is None or row[0] > now:
                return Taken(host, (), (), ())
            journalled = _ids(
                db.execute(
                    "UPDATE match_setups SET host = ? WHERE host = ? RETURNING match_id",
                    (me, host),
                )
            )
            unfinished = _ids(
                db.execute(
                    "UPDATE matches SET host = ? WHERE host = ? AND status IN"
                    f" {_UNFINISHED} RETURNING id",
                    (me, host),
                )
            )
            ladder = _ids(
                db.execute(
                    "UPDATE ladder_matches SET host = ?, address = ? WHERE host = ?"
                    " AND status = 'running' RETURNING match_id",
                    (me, address, host),
                )
            )
        return Taken(host, journalled, unfinished, ladder)

    def abort(self, match_ids: Sequence[str], reason: str) -> None:
        """Marks the unfinished matches ``match_ids`` aborted (taken over, but not
        resumed: there was no journal to resume them from)."""
        if not match_ids:
            return
        with transaction(self._db) as db:
            db.executemany(
                "UPDATE matches SET status = 'aborted', ended = ?, reason = ? WHERE id = ?"
                f" AND status IN {_UNFINISHED}",
                [(now_iso(), reason, m) for m in match_ids],
            )

    def release(self, host: str, now: float, force: bool) -> HostRow:
        """Returns ``host`` as it was, after marking its lease released, so that a
        live host takes its matches over at its next beat. Raises HostRefusedError
        for an unknown host, and for one whose lease runs at ``now`` unless ``force``
        (its own writes for the matches taken from it are then refused)."""
        with transaction(self._db) as db:
            row = _listed(db, " WHERE h.host = ?", (host,))
            if not row:
                raise HostRefusedError(f"no host {host!r} holds or held a lease here")
            (found,) = row
            if found.live(now) and not force:
                raise HostRefusedError(
                    f"host {host!r} holds a live lease (renewed {now - found.renewed:.1f} s"
                    " ago): it is running; give --force to take its matches from it anyway"
                )
            db.execute("UPDATE hosts SET expires = 0 WHERE host = ?", (host,))
            return found

    def hosts(self) -> list[HostRow]:
        """Returns every host that holds or held a lease, by host id."""
        return _listed(self._db, "", ())


def _ids(cursor: Cursor) -> tuple[str, ...]:
    return tuple(str(r[0]) for r in cursor.fetchall())


def _listed(db: Connection, where: str, params: tuple[str, ...]) -> list[HostRow]:
    rows = db.execute(
        "SELECT h.host, h.address, h.expires, h.renewed, (SELECT COUNT(*) FROM matches m"
        f" WHERE m.host = h.host AND m.status IN {_UNFINISHED}) FROM hosts h{where}"
        " ORDER BY h.host",
        params,
    ).fetchall()
    return [HostRow(str(h), str(a), float(e), float(r), int(n)) for h, a, e, r, n in rows]
