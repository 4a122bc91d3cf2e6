"""The server's matches: one row per match, with its game record once it ended.

A match row is written when the match is created (``waiting``), updated when it
starts (``running``) and once more when it ends (``finished`` or ``aborted``),
with its game record. The end is written durably, in one statement, before the
result is announced to anyone, and only over a match that has not ended yet, so
writing it twice changes nothing. A server that starts finds the matches a crash
cut off (still ``waiting`` or ``running``) and marks them ``aborted`` (unless it
resumes them from the journal, ``server.db.journal``).

Writes run on the :class:`~server.db.writer.Writer` thread, one at a time in the
order they were given. Creating, starting and naming a match are queued without
waiting; ending it is awaited. Each write is one transaction, so a crash leaves
none half-written, and :meth:`Storage.close` runs every write still queued before
it closes.

The ladder keeps its own tables in the same database (``server.db.ladder``); the
web page reads both through :func:`stored_match` and ``server.db.ladder.reads``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import sqlite3
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

import structlog

from ..notes import SeatNotes
from ..paging import Page, key_of, page_of
from ..status import MatchStatus
from . import schema
from .connection import (
    CLAIM_LOCK,
    ERRORS,
    POSTGRESQL,
    SQLITE,
    Connection,
    PostgresError,
    StorageError,
    connect,
    is_url,
    now_iso,
    shown,
    transaction,
)
from .journal import Journal
from .journal_file import FileJournal
from .journal_table import TableJournal
from .writer import Writer

log = structlog.get_logger()

_END_MATCH = (
    "INSERT INTO matches (id, status, players, names, ladder, created, ended, "
    "winners, ranks, delivered, reason, record, host) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET status = excluded.status, names = excluded.names, "
    "ended = excluded.ended, winners = excluded.winners, ranks = excluded.ranks, "
    "delivered = excluded.delivered, reason = excluded.reason, "
    "record = excluded.record WHERE matches.status IN ('waiting', 'running')"
)

#: The same on a database that hosts share: a match taken over by another host
#: (``server.db.hosts``) is ended by that host only, never by the one it was taken from.
_END_OWN_MATCH = _END_MATCH + " AND matches.host = excluded.host"


@dataclass(frozen=True, slots=True)
class MatchRow:
    """One stored match: as listed, and with its game record (JSON text) when read
    with it (:func:`stored_match`)."""

    id: str
    status: MatchStatus
    players: int
    names: tuple[str, ...]
    ladder: bool
    created: str
    ended: str | None
    winners: tuple[int, ...]
    ranks: tuple[int, ...]
    delivered: tuple[int, ...]
    reason: str | None
    record: str | None = None


#: The columns of a match as listed, in :class:`MatchRow`'s order.
_COLUMNS = "id, status, players, names, ladder, created, ended, winners, ranks, delivered, reason"


def _row(r: Sequence[Any], record: str | None = None) -> MatchRow:
    (
        match_id,
        status,
        players,
        names,
        ladder,
        created,
        ended,
        winners,
        ranks,
        delivered,
        reason,
    ) = r
    return MatchRow(
        id=match_id,
        status=MatchStatus(status),
        players=int(players),
        names=tuple(json.loads(names)),
        ladder=bool(ladder),
        created=created,
        ended=ended,
        winners=tuple(json.loads(winners or "[]")),
        ranks=tuple(json.loads(ranks or "[]")),
        delivered=tuple(json.loads(delivered or "[]")),
        reason=reason,
        record=record,
    )


def stored_match(db: Connection, match_id: str) -> MatchRow | None:
    """Returns a stored match with its record (None until it ended), or None when
    unknown."""
    r = db.execute(f"SELECT {_COLUMNS}, record FROM matches WHERE id = ?", (match_id,)).fetchone()
    return None if r is None else _row(r[:-1], None if r[-1] is None else str(r[-1]))


def reveal_records(db: Connection, set_id: str, unseal: Callable[[str], str]) -> None:
    """Completes the sealed records of a duplicate set's ended matches with
    ``unseal(record)`` (in the caller's transaction)."""
    records = db.execute(
        "SELECT s.id, s.record FROM ladder_matches m JOIN matches s ON s.id = m.match_id"
        " WHERE m.set_id = ? AND s.record IS NOT NULL",
        (set_id,),
    ).fetchall()
    revealed = [
        (unsealed, match_id) for match_id, text in records if (unsealed := unseal(text)) != text
    ]
    db.executemany("UPDATE matches SET record = ? WHERE id = ?", revealed)


class Storage:
    """The server's database: reads on the event loop, writes on its :class:`Writer`.

    ``path`` is an SQLite file, or a ``postgresql://`` URL (kept as given in ``path``).
    ``host_id`` names this server among the hosts that share a PostgreSQL database
    (``mammamia serve --host-id``): each match row carries it, and this server resumes
    or aborts only its own matches at start-up. An SQLite file has one host, so there
    every row is this server's. Raises StorageError when the database cannot be
    opened or brought to this server's schema.
    """

    def __init__(self, path: str | Path, host_id: str = "") -> None:
        self.path: str | Path = str(path) if is_url(path) else Path(path)
        self.dialect = POSTGRESQL if is_url(path) else SQLITE
        self.host_id = host_id
        #: Whether other hosts may share the database (PostgreSQL): rows are then
        #: this server's only when they carry its ``host_id``.
        self.shared = self.dialect == POSTGRESQL
        self.writer = Writer()
        try:
            # Reads: on the event loop, quick (SQLite's WAL and PostgreSQL's snapshots:
            # readers never wait for the writer).
            self.db = connect(self.path, durable=False)
            try:
                schema.upgrade(self.path)  # the tables: server/db/migrations, up to date
            except schema.SchemaError as e:
                self.db.close()
                raise StorageError(str(e)) from e
            # Writes, on the writer thread only. Creating and starting a match need not
            # wait for the disk (a match cut off before its end is aborted anyway); its
            # end is synced to disk before it is announced.
            self._quick = connect(self.path, durable=False)
            self._durable = connect(self.path, durable=True)
        except PostgresError as e:
            self.writer.close()
            raise StorageError(f"{self.name}: {e}") from e
        self._claim: BinaryIO | None = None
        self._claimed: Connection | None = None

    @property
    def name(self) -> str:
        """Returns the database as it may be shown: the file, or the URL without
        its password."""
        return shown(self.path)

    def close(self) -> None:
        """Runs every write still queued, then closes the connections (and gives up
        the claim on the database)."""
        self.writer.close()
        self.db.close()
        self._quick.close()
        self._durable.close()
        if self._claim is not None:
            self._claim.close()
            self._claim = None
        if self._claimed is not None:
            # Given up here, not by the connection's end: PostgreSQL releases a closed
            # session's locks a moment later, and a server started at once after this
            # one would find its host id still claimed.
            with contextlib.suppress(*ERRORS):
                self._claimed.execute("SELECT pg_advisory_unlock_all()")
            self._claimed.close()
            self._claimed = None

    def check(self) -> None:
        """Raises StorageError when the file fails SQLite's quick integrity check, or
        when the PostgreSQL database cannot be read (PostgreSQL checks its own pages:
        there is no quick check to run from a client)."""
        if self.dialect == POSTGRESQL:
            try:
                self.db.execute("SELECT 1 FROM matches LIMIT 1").fetchall()
            except PostgresError as e:
                raise StorageError(f"{self.name}: the database cannot be read: {e}") from e
            return
        try:
            rows = [r[0] for r in self.db.execute("PRAGMA quick_check")]
        except sqlite3.Error as e:
            raise StorageError(f"{self.path}: the database is damaged: {e}") from e
        if rows != ["ok"]:
            raise StorageError(f"{self.path}: the database is damaged: {rows[0]}")

    def claim(self) -> None:
        """Takes the database (an SQLite file), or this server's ``host_id`` in it (a
        PostgreSQL database that many hosts share), for this process alone; raises
        StorageError when another server holds it. Two servers on one file, or with one
        host id, would resume and abort each other's matches. The claim is an advisory
        lock that ends with the process: on a file, ``flock``; on PostgreSQL, a session
        advisory lock on (:data:`CLAIM_LOCK`, the host id's hash) held by a connection
        of its own."""
        if self.dialect == POSTGRESQL:
            self._claim_postgres()
            return
        claim = open(self.path, "rb")  # noqa: SIM115 (held until close)
        try:
            fcntl.flock(claim.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            claim.close()
            raise StorageError(
                f"{self.path}: another server uses this database; stop it, "
                f"or give this one another --db"
            ) from None
        self._claim = claim

    def _claim_postgres(self) -> None:
        try:
            db = connect(self.path)
            (taken,) = db.execute(
                "SELECT pg_try_advisory_lock(CAST(? AS INTEGER), hashtext(?))",
                (CLAIM_LOCK, self.host_id),
            ).fetchone()
        except PostgresError as e:
            raise StorageError(f"{self.name}: {e}") from e
        if not taken:
            db.close()
            raise StorageError(
                f"{self.name}: another server uses this database as host "
                f"{self.host_id!r}; stop it, or give this one another "
                f"--host-id (or --advertise)"
            )
        self._claimed = db

    def adopt(self) -> int:
        """Returns how many unfinished matches without a host (written before hosts
        were named) this server took as its own. On PostgreSQL only (an SQLite file's
        rows are all its one server's); call it once the claim is held, before
        :meth:`abort_unfinished`."""
        if not self.shared:
            return 0
        with transaction(self.db, CLAIM_LOCK) as db:
            cur = db.execute(
                "UPDATE matches SET host = ? WHERE host IS NULL AND status IN "
                "('waiting', 'running')",
                (self.host_id,),
            )
            db.execute("UPDATE match_setups SET host = ? WHERE host IS NULL", (self.host_id,))
            return int(cur.rowcount)

    def _own(self) -> tuple[str, tuple[str, ...]]:
        """Returns the SQL condition (and its parameters) of this server's match rows."""
        return (" AND host = ?", (self.host_id,)) if self.shared else ("", ())

    def open_journal(self) -> Journal:
        """Returns the journal of this server's running matches: a file beside an
        SQLite database, the database's own tables on PostgreSQL (``server.db.journal``).
        Raises StorageError when it cannot be opened."""
        if self.dialect == SQLITE:
            return FileJournal(self.path)
        try:
            return TableJournal(str(self.path), self.host_id, self.db, self.writer)
        except PostgresError as e:
            raise StorageError(f"{self.name}: {e}") from e

    def reinstate(self, statuses: dict[str, MatchStatus]) -> None:
        """Marks the stored rows of resumed matches with their status again (waiting or
        running: start-up marked every unfinished row aborted). For start-up, on the
        calling thread."""
        with transaction(self.db) as db:
            db.executemany(
                "UPDATE matches SET status = ?, ended = NULL, reason = NULL WHERE id = ?",
                [(str(status), m) for m, status in statuses.items()],
            )

    def connect(self) -> Connection:
        """Returns a new connection to the same database (for another thread or module)."""
        return connect(self.path)

    def abort_unfinished(self, reason: str, keep: Collection[str] = ()) -> list[str]:
        """Returns the ids of matches left waiting or running, after marking them aborted,
        except those in ``keep`` (the matches the server resumes).

        For start-up, before any match is created: it writes on the calling thread.
        """
        own, mine = self._own()
        with transaction(self.db):
            ids = [
                r[0]
                for r in self.db.execute(
                    "SELECT id FROM matches WHERE status IN ('waiting', 'running')" + own, mine
                ).fetchall()
                if r[0] not in keep
            ]
            self.db.executemany(
                "UPDATE matches SET status = 'aborted', ended = ?, reason = ? WHERE id = ?",
                [(now_iso(), reason, match_id) for match_id in ids],
            )
        return ids

    def add_match(
        self, match_id: str, players: int, names: Sequence[str], ladder: bool, created: str
    ) -> None:
        """Queues storing a new match as waiting (a second time changes nothing)."""
        self.writer.send(
            self._quick.execute,
            "INSERT INTO matches (id, status, players, names, ladder, "
            "created, host) VALUES (?, 'waiting', ?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (match_id, players, json.dumps(list(names)), int(ladder), created, self.host_id),
        )

    def set_running(self, match_id: str) -> None:
        """Queues marking a waiting match as running."""
        self.writer.send(
            self._quick.execute,
            "UPDATE matches SET status = 'running' WHERE id = ? AND status = 'waiting'",
            (match_id,),
        )

    def set_names(self, match_id: str, names: Sequence[str]) -> None:
        """Queues storing the seat names of a match that has not ended."""
        self.writer.send(
            self._quick.execute,
            "UPDATE matches SET names = ? WHERE id = ? AND status IN ('waiting', 'running')",
            (json.dumps(list(names)), match_id),
        )

    async def end_match(
        self,
        match_id: str,
        status: MatchStatus,
        record: str,
        *,
        players: int,
        names: Sequence[str],
        ladder: bool,
        created: str,
        winners: Sequence[int] = (),
        ranks: Sequence[int] = (),
        delivered: Sequence[int] = (),
        reason: str | None = None,
    ) -> bool:
        """Returns whether this call ended the match, once its status and record are
        on disk; raises StorageError when they could not be stored.

        A match that has already ended is left as it is, so a second call is harmless.
        The whole row is written, so the end is stored even if an earlier queued write
        of the match failed.
        """
        if not MatchStatus(status).ended:
            raise ValueError(f"an ended match is 'finished' or 'aborted', got {status!r}")
        try:
            cur = await self.writer.run(
                self._durable.execute,
                _END_OWN_MATCH if self.shared else _END_MATCH,
                (
                    match_id,
                    status,
                    players,
                    json.dumps(list(names)),
                    int(ladder),
                    created,
                    now_iso(),
                    json.dumps(list(winners)),
                    json.dumps(list(ranks)),
                    json.dumps(list(delivered)),
                    reason,
                    record,
                    self.host_id,
                ),
            )
        except ERRORS as e:
            raise StorageError(f"match {match_id}: its end was not stored: {e}") from e
        return bool(cur.rowcount == 1)

    async def store_notes(self, match_id: str, notes: Sequence[SeatNotes]) -> None:
        """Returns once the seats' notes of an ending match are on disk (before its end
        is stored, so that an owner who reads the ended match finds them); raises
        StorageError when they could not be stored. Storing them again changes nothing."""
        if not notes:
            return
        try:
            await self.writer.run(
                self._durable.executemany,
                "INSERT INTO match_notes (match_id, seat, token_hash, notes) "
                "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    (match_id, n.seat, n.token_hash, json.dumps([list(t) for t in n.notes]))
                    for n in notes
                ],
            )
        except ERRORS as e:
            raise StorageError(f"match {match_id}: its notes were not stored: {e}") from e

    def notes(self, match_id: str) -> list[SeatNotes]:
        """Returns the notes the seats of an ended match left, by seat (only the seats
        that left any). For an owner's record only (server.visibility.owned_record)."""
        rows = self.db.execute(
            "SELECT seat, token_hash, notes FROM match_notes WHERE match_id = ? ORDER BY seat",
            (match_id,),
        ).fetchall()
        return [
            SeatNotes(
                int(seat),
                str(hashed),
                tuple((int(index), str(note)) for index, note in json.loads(text)),
            )
            for seat, hashed, text in rows
        ]

    def match(self, match_id: str) -> MatchRow | None:
        """Returns a stored match, or None when unknown."""
        r = self.db.execute(f"SELECT {_COLUMNS} FROM matches WHERE id = ?", (match_id,)).fetchone()
        return None if r is None else _row(r)

    def record(self, match_id: str) -> str | None:
        """Returns the stored game record of an ended match as JSON text, or None."""
        r = self.db.execute("SELECT record FROM matches WHERE id = ?", (match_id,)).fetchone()
        return None if r is None or r[0] is None else str(r[0])

    def matches(self, limit: int = 50) -> list[MatchRow]:
        """Returns up to ``limit`` matches, newest first."""
        # Ties of creation time: the one inserted last first (SQLite's rowid; on
        # PostgreSQL the identity column ``seq``, revision 0001).
        order = "rowid" if self.dialect == SQLITE else "seq"
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM matches ORDER BY created DESC, {order} DESC LIMIT ?", (limit,)
        )
        return [_row(r) for r in rows]

    def matches_page(self, size: int, token: str = "") -> Page[MatchRow]:
        """Returns a page of at most ``size`` matches, newest first: the first page, or
        the one after the page whose next token is ``token`` (``server.paging``).

        Raises BadPageToken for a token this list did not give.
        """
        # The order of :meth:`matches`, creation time then insertion, both of which
        # never change for a match: a match created meanwhile goes before the pages
        # still to come, never into them.
        order = "rowid" if self.dialect == SQLITE else "seq"
        after = key_of(token, "organiser.matches", (str, int))
        where, params = "", cast(tuple[object, ...], ())
        if after is not None:
            where = f" WHERE (created < ? OR (created = ? AND {order} < ?))"
            params = (after[0], after[0], after[1])
        rows = self.db.execute(
            f"SELECT {_COLUMNS}, {order} FROM matches{where}"
            f" ORDER BY created DESC, {order} DESC LIMIT ?",
            (*params, size + 1),
        ).fetchall()
        page = page_of(rows, size, "organiser.matches", lambda r: (r[5], int(r[-1])))
        return Page([_row(r[:-1]) for r in page.items], page.next_token)

    def counts(self) -> dict[str, Any]:
        """Returns how many matches there are per status."""
        return {
            r[0]: r[1]
            for r in self.db.execute("SELECT status, COUNT(*) FROM matches GROUP BY status")
        }
