"""The Enter streams of many hosts and their scheduling passes (``server.ladder.shared_lobby``).

On a PostgreSQL database that many hosts share, each bot with an Enter stream open
has an entry (``ladder_entries``: its host, the stream's id, its host's last
heartbeat); a host holds its presence, and the ladder alone or shared, with session
advisory locks (:meth:`Entries.claim`); a scheduling pass (:meth:`Entries.take`)
forms matches from the bots waiting on any host in one transaction under the
ladder's lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from ...ladder.ratings import Rating, initial
from ..connection import (
    LADDER_HOST_LOCK,
    LADDER_LOCK,
    Connection,
    StorageError,
    among,
    connect,
    shown,
)
from .discipline import benched
from .leagues import places
from .reads import _waiting
from .rows import Formed


class Entries:
    """The entries and claims of :class:`server.db.ladder.store.LadderStore` (which
    gives the connections and the write transaction)."""

    path: str
    _postgresql: bool
    _writes: Connection
    _claimed: Connection | None
    _claim: tuple[bool, str] | None

    def _write(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def claim(self, alone: bool, host: str) -> None:
        """On PostgreSQL, takes the ladder for this host alone (``alone``: duplicate
        sets, which ``server.ladder.shared_lobby`` does not schedule across hosts, need a
        ladder of one host), or as one of the hosts that share it; raises StorageError
        when another host holds it the other way. A session advisory lock on
        (``LADDER_LOCK``, 1), exclusive or shared, held by a connection of its own for
        as long as the process runs; the same connection holds the host's presence,
        (``LADDER_HOST_LOCK``, the hash of ``host``), which the other hosts' passes
        read (:meth:`take`). On an SQLite file, nothing to take."""
        if not self._postgresql:
            return
        db = connect(self.path)
        try:
            taken = self._lock(db, alone, host)
        except BaseException:
            db.close()
            raise
        if not taken:
            db.close()
            raise StorageError(
                f"{shown(self.path)}: another host runs this database's ladder "
                + (
                    "with other hosts; --ladder-duplicate needs a ladder of one host"
                    if alone
                    else "alone (with --ladder-duplicate); stop it, or give this host another --db"
                )
            )
        self._claimed = db
        self._claim = (alone, host)

    def keep_claim(self) -> bool:
        """Takes the claim of :meth:`claim` again when its session lost it (PostgreSQL
        restarted, and its locks went with it); returns whether it was taken again.
        For the writer thread, with every heartbeat. Raises StorageError when another
        host now holds the ladder the other way, and what ``server.db.connection.ERRORS``
        names when the database is away (the next call connects again)."""
        if self._claimed is None or self._claim is None:
            return False
        alone, host = self._claim
        (held,) = self._claimed.execute(
            "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND pid = pg_backend_pid() AND objsubid = 2 AND classid = CAST(? AS oid)"
            " AND objid = CAST(hashtext(?) AS oid)",
            (LADDER_HOST_LOCK, host),
        ).fetchone()
        if held:
            return False
        if not self._lock(self._claimed, alone, host):
            raise StorageError(
                f"{shown(self.path)}: another host took this database's "
                f"ladder {'with others' if alone else 'alone'} meanwhile"
            )
        return True

    @staticmethod
    def _lock(db: Connection, alone: bool, host: str) -> bool:
        """Returns whether ``db``'s session took the ladder (alone or shared) and the
        host's presence; takes neither when the ladder is held the other way."""
        take = "pg_try_advisory_lock" if alone else "pg_try_advisory_lock_shared"
        (taken,) = db.execute(f"SELECT {take}(CAST(? AS INTEGER), 1)", (LADDER_LOCK,)).fetchone()
        if taken:
            db.execute(
                "SELECT pg_advisory_lock_shared(CAST(? AS INTEGER), hashtext(?))",
                (LADDER_HOST_LOCK, host),
            )
        return bool(taken)

    # Entries and matches of many hosts

    def adopt(self, host: str) -> int:
        """Returns how many running matches without a host (recorded before hosts were
        named) the host ``host`` took as its own."""
        with self._write() as db:
            cur = db.execute(
                "UPDATE ladder_matches SET host = ? WHERE host IS NULL AND status = 'running'",
                (host,),
            )
            return int(cur.rowcount)

    def enter(self, name: str, host: str, stream: str, now: float) -> None:
        """Records that the bot ``name`` has an Enter stream ``stream`` open on ``host``
        (replacing any older entry of the bot: that stream is then replaced)."""
        self._writes.execute(
            "INSERT INTO ladder_entries (name, host, stream, entered, heartbeat)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET host = excluded.host,"
            " stream = excluded.stream, entered = excluded.entered,"
            " heartbeat = excluded.heartbeat",
            (name, host, stream, now, now),
        )

    def leave(self, name: str, stream: str) -> None:
        """Removes the entry of ``name`` if it is still the stream ``stream``'s."""
        self._writes.execute(
            "DELETE FROM ladder_entries WHERE name = ? AND stream = ?", (name, stream)
        )

    def beat(self, host: str, streams: Sequence[str], now: float) -> None:
        """Marks the entries of ``streams`` held by ``host`` alive at ``now`` (a row
        whose stream ended without its removal, the database away then, goes quiet)."""
        if not streams:
            return
        test, listed = among(self._writes, streams)
        self._writes.execute(
            f"UPDATE ladder_entries SET heartbeat = ? WHERE host = ? AND stream {test}",
            (now, host, listed),
        )

    def clear_entries(self, host: str) -> int:
        """Removes the entries held by ``host`` (at its start-up: its streams are gone);
        returns how many."""
        cur = self._writes.execute("DELETE FROM ladder_entries WHERE host = ?", (host,))
        return int(cur.rowcount)

    def publish(self, match_id: str, commitment: str) -> None:
        """Announces the seats of a running match formed by :meth:`take`, with its
        commitment, once the match exists (and again whenever a host resumes it): from
        then on the hosts of its bots' Enter streams hand its seats out, commitment
        included (a match that ended meanwhile keeps none). Their tokens were recorded
        with the seats, so a host that stopped between creating the match and this
        call announces them when it resumes the match."""
        with self._write() as db:
            db.execute(
                "UPDATE ladder_matches SET commitment = ?, announced = 1 WHERE match_id = ?"
                " AND status = 'running'",
                (commitment or None, match_id),
            )

    def take(
        self,
        host: str,
        address: str,
        alive_since: float,
        form: Callable[[list[tuple[str, Rating, int, int]]], list[tuple[str, ...]]],
        reserve: Callable[[int], tuple[str, Sequence[str]]],
        *,
        now: float | None = None,
        per_hour: int = 0,
    ) -> list[Formed]:
        """Returns the matches formed from the bots waiting on any host, recorded as
        running on ``host``: one transaction under the ladder's lock, so that no other
        host's pass sees the same bots waiting.

        A bot waits when its entry beat at ``alive_since`` or later, it holds no seat
        in a running match, and (on PostgreSQL) its entry's host is ``host`` or holds
        its presence (:meth:`claim`): a host that died is passed over as soon as
        PostgreSQL ends its session, not only once its heartbeats are ``alive_since``
        old (those cover a host whose session lingers, cut off from the database).
        With leagues on, each boss waits too while in no running match.
        ``form`` gets them as (name, rating over all matches, rated games, league's
        place) and returns
        the matches to start (names in seat order); ``reserve(n)`` returns a new match
        id and ``n`` seat tokens for each. The seats are recorded with their tokens,
        not yet announced:
        :meth:`publish` announces them once the match exists. No match forms while
        the ladder is paused (the ``ladder_paused`` switch). A suspended bot, and
        one that has played its matches of the hour before ``now`` (its quota, or
        ``per_hour``), is passed over (``server.db.ladder.discipline.benched``)."""
        formed: list[Formed] = []
        present, params = (_PRESENT, (host, LADDER_HOST_LOCK)) if self._postgresql else ("", ())
        with self._write() as db:
            # An operator's pause (server.db.admin, turned under the same lock) holds on
            # every host from the pass after it: read in the pass's own transaction.
            if db.execute(
                "SELECT 1 FROM switches WHERE name = 'ladder_paused' AND value = 'on'"
            ).fetchone():
                return formed
            names = [
                n
                for (n,) in db.execute(
                    "SELECT e.name FROM ladder_entries e WHERE e.heartbeat >= ?"
                    + present
                    + " AND e.name NOT IN (SELECT r.name FROM ladder_matches m"
                    " JOIN ladder_results r ON r.match_id = m.match_id"
                    " WHERE m.status = 'running') ORDER BY e.entered",
                    (alive_since, *params),
                ).fetchall()
            ]
            if names:
                out = benched(db, names, time.time() if now is None else now, per_hour)
                names = [n for n in names if n not in out]
            # With leagues on, the bosses (played by the host that runs their match)
            # wait whenever they are in no running match.
            names += [n for n in _free_bosses(db) if n not in names]
            if not names:
                return formed
            known = _waiting(db, names)
            league = places(db, names)
            fresh = (initial(), 0)
            for seated in form([(n, *known.get(n, fresh), league.get(n, 0)) for n in names]):
                match_id, tokens = reserve(len(seated))
                _start_match(db, match_id, seated, host, address, tokens, announced=False)
                formed.append(Formed(match_id, tuple(seated), tuple(tokens)))
        return formed


def _free_bosses(db: Connection) -> list[str]:
    """Returns the bosses in no running match (none when leagues are off)."""
    return [
        n
        for (n,) in db.execute(
            "SELECT boss FROM ladder_leagues WHERE boss IS NOT NULL"
            " AND boss NOT IN (SELECT r.name FROM ladder_matches m"
            " JOIN ladder_results r ON r.match_id = m.match_id"
            " WHERE m.status = 'running') ORDER BY position"
        ).fetchall()
    ]


def _start_match(
    db: Connection,
    match_id: str,
    names: Sequence[str],
    host: str | None,
    address: str | None,
    tokens: Sequence[str] | None,
    commitment: str = "",
    set_id: str | None = None,
    set_index: int | None = None,
    *,
    announced: bool = True,
) -> None:
    db.execute(
        "INSERT INTO ladder_matches (match_id, players, status, created, commitment,"
        " set_id, set_index, host, address, announced)"
        " VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (
            match_id,
            len(names),
            time.time(),
            commitment or None,
            set_id,
            set_index,
            host,
            address,
            int(announced),
        ),
    )
    (created,) = db.execute(
        "SELECT created FROM ladder_matches WHERE match_id = ?", (match_id,)
    ).fetchone()
    held = list(tokens) if tokens is not None else [None] * len(names)
    # Each seat is the version its bot entered with last (ladder_bots.version): the
    # entry that is handed the seat, on whichever host.
    db.executemany(
        "INSERT INTO ladder_results (match_id, seat, name, created, token, version)"
        " VALUES (?, ?, ?, ?, ?, COALESCE((SELECT version FROM ladder_bots WHERE name = ?),"
        " '')) ON CONFLICT DO NOTHING",
        [(match_id, s, n, created, t, n) for s, (n, t) in enumerate(zip(names, held, strict=True))],
    )


#: The condition on an entry ``e`` that its host is the pass's own (the first
#: parameter) or holds its presence lock (the second, ``LADDER_HOST_LOCK``) in this
#: database; int4 keys show in ``pg_locks`` as the oids of their 32 bits.
_PRESENT = (
    " AND (e.host = ? OR CAST(hashtext(e.host) AS oid) IN (SELECT l.objid"
    " FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted"
    " AND l.objsubid = 2 AND l.classid = CAST(? AS oid) AND l.database ="
    " (SELECT oid FROM pg_database WHERE datname = current_database())))"
)
