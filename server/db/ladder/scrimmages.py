"""Scrimmages, stored (revision 0015; see ``server.ladder.scrimmage``).

A scrimmage's row is written when it is asked for (the rate limit per name is read
in the same transaction, so two calls at once cannot both pass it), each of its
matches when it starts and when it ends, and the scrimmage's table when it ends.
A scrimmage match is seated through the ladder's lobby, so while it runs it also
has a row in ``ladder_matches``; when it ends, :meth:`Scrimmages.end_scrimmage_match`
keeps its result here and removes that row in one transaction: the ladder never
rates a scrimmage, and its standings, lists and exports never show one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from mammamia.fairness import unseal

from ...paging import Page, key_of, page_of
from ...quoting import quoted
from ...status import MatchStatus
from ..connection import Connection, among
from .rows import LadderError, player

#: A scrimmage's status while its matches are played.
PLAYING = "playing"


class ScrimmageLimitError(LadderError):
    """The name has a scrimmage under way, or has used its scrimmages of the hour."""


@dataclass(frozen=True, slots=True)
class ScrimmageRow:
    """A scrimmage as asked for: its id, the bot that asked (name and version), its
    opponents, players per match, matches planned, duplicate deals or not, the
    sequential test's parameters as JSON (None: none), and when (UNIX time)."""

    scrimmage_id: str
    name: str
    version: str
    opponents: tuple[str, ...]
    players: int
    planned: int
    duplicate: bool
    sprt: str | None
    created: float


@dataclass(frozen=True, slots=True)
class ScrimmageMatch:
    """A match of a scrimmage: its id, the scrimmage's, its index in the scrimmage,
    its seats as rated players (``NAME`` or ``NAME@VERSION``), its status, and each
    seat's rank and pizzas once it ended (empty before)."""

    match_id: str
    scrimmage_id: str
    index: int
    names: tuple[str, ...]
    status: str
    ranks: tuple[int, ...] = ()
    delivered: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class StoredScrimmage:
    """A scrimmage as kept: as asked for, its status and why it stopped, when it
    ended (None while it plays), and its matches in the order played."""

    row: ScrimmageRow
    status: str
    reason: str | None
    ended: float | None
    matches: tuple[ScrimmageMatch, ...]


#: The listing a Scrimmages page token belongs to (``server.paging``).
SCRIMMAGES = "ladder.scrimmages"


class Scrimmages:
    """The scrimmages of :class:`server.db.ladder.store.LadderStore` (which gives the
    connections and the write transaction)."""

    _db: Connection

    def _write(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def start_scrimmage(self, row: ScrimmageRow, per_hour: int) -> None:
        """Records a scrimmage as playing. Raises ScrimmageLimitError (changing
        nothing) when the bot has a scrimmage playing, or has asked for ``per_hour``
        scrimmages in the hour before ``row.created`` (0: no limit)."""
        with self._write() as db:
            (playing,) = db.execute(
                "SELECT COUNT(*) FROM ladder_scrimmages WHERE name = ? AND status = ?",
                (row.name, PLAYING),
            ).fetchone()
            if playing:
                raise ScrimmageLimitError(
                    f"bot {quoted(row.name)} has a scrimmage under way: one at a time; "
                    "ask again once it has ended"
                )
            (recent,) = db.execute(
                "SELECT COUNT(*) FROM ladder_scrimmages WHERE name = ? AND created > ?",
                (row.name, row.created - 3600.0),
            ).fetchone()
            if per_hour and recent >= per_hour:
                raise ScrimmageLimitError(
                    f"bot {quoted(row.name)} has used its quota of scrimmages: {per_hour} an "
                    "hour; ask again within the next hour's quota"
                )
            db.execute(
                "INSERT INTO ladder_scrimmages (scrimmage_id, name, version, opponents,"
                " players, planned, duplicate, sprt, created, status)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row.scrimmage_id,
                    row.name,
                    row.version,
                    json.dumps(list(row.opponents)),
                    row.players,
                    row.planned,
                    int(row.duplicate),
                    row.sprt,
                    row.created,
                    PLAYING,
                ),
            )

    def start_scrimmage_match(
        self,
        scrimmage_id: str,
        index: int,
        match_id: str,
        seats: Sequence[str],
        seed: str | None,
        now: float,
    ) -> tuple[str, ...]:
        """Records that the match ``match_id``, whose bots are ``seats`` in seat order,
        is match ``index`` of the scrimmage, with its deal set's server seed (None: not
        in duplicate), before the lobby seats it; returns its seats as rated players
        (each bot's version entered now, as the lobby records them)."""
        with self._write() as db:
            names = tuple(player(n, _version(db, n)) for n in seats)
            db.execute(
                "INSERT INTO scrimmage_matches (match_id, scrimmage_id, idx, names, status,"
                " created, seed) VALUES (?, ?, ?, ?, 'running', ?, ?) ON CONFLICT DO NOTHING",
                (match_id, scrimmage_id, index, json.dumps(list(names)), now, seed),
            )
        return names

    def end_scrimmage_match(
        self, match_id: str, status: str, ranks: Sequence[int], delivered: Sequence[int]
    ) -> bool:
        """Stores how a scrimmage match ended and removes its ladder rows; returns
        False (changing nothing) when it is not a running scrimmage match."""
        with self._write() as db:
            cur = db.execute(
                "UPDATE scrimmage_matches SET status = ?, ranks = ?, delivered = ?"
                " WHERE match_id = ? AND status = 'running'",
                (
                    str(status),
                    json.dumps(list(ranks)) if status == MatchStatus.FINISHED else None,
                    json.dumps(list(delivered)) if status == MatchStatus.FINISHED else None,
                    match_id,
                ),
            )
            if cur.rowcount != 1:
                return False
            seated = db.execute(
                "SELECT name, version FROM ladder_results WHERE match_id = ? ORDER BY seat",
                (match_id,),
            ).fetchall()
            if seated:  # the versions as the lobby recorded the seats
                names = [player(n, v) for n, v in seated]
                db.execute(
                    "UPDATE scrimmage_matches SET names = ? WHERE match_id = ?",
                    (json.dumps(names), match_id),
                )
            db.execute("DELETE FROM ladder_results WHERE match_id = ?", (match_id,))
            db.execute("DELETE FROM ladder_matches WHERE match_id = ?", (match_id,))
        return True

    def reveal_scrimmage(self, match_ids: Sequence[str]) -> None:
        """Completes the sealed records of the ended scrimmage matches ``match_ids``
        with their deal sets' seeds (mammamia.fairness.unseal)."""
        if not match_ids:
            return
        with self._write() as db:
            test, listed = among(db, match_ids)
            rows = db.execute(
                "SELECT s.id, s.record, m.seed FROM scrimmage_matches m"
                " JOIN matches s ON s.id = m.match_id"
                f" WHERE m.seed IS NOT NULL AND s.record IS NOT NULL AND m.match_id {test}",
                (listed,),
            ).fetchall()
            revealed = [
                (text, match_id)
                for match_id, record, seed in rows
                if (text := unseal(str(record), str(seed))) != record
            ]
            db.executemany("UPDATE matches SET record = ? WHERE id = ?", revealed)

    def end_scrimmage(
        self, scrimmage_id: str, status: str, reason: str | None, result: str, now: float
    ) -> None:
        """Ends a playing scrimmage with its status (``complete`` or ``stopped``), why
        it stopped, and its table as JSON."""
        with self._write() as db:
            db.execute(
                "UPDATE ladder_scrimmages SET status = ?, reason = ?, result = ?, ended = ?"
                " WHERE scrimmage_id = ? AND status = ?",
                (status, reason, result, now, scrimmage_id, PLAYING),
            )

    def stop_scrimmages(self, reason: str, now: float) -> list[str]:
        """Ends every playing scrimmage as stopped for ``reason`` (at start-up: their
        calls are gone) and completes their matches' sealed records; returns their ids."""
        with self._write() as db:
            ids = [
                r[0]
                for r in db.execute(
                    "SELECT scrimmage_id FROM ladder_scrimmages WHERE status = ?", (PLAYING,)
                ).fetchall()
            ]
            db.execute(
                "UPDATE ladder_scrimmages SET status = 'stopped', reason = ?, ended = ?"
                " WHERE status = ?",
                (reason, now, PLAYING),
            )
        for scrimmage_id in ids:
            self.reveal_scrimmage([m.match_id for m in self.scrimmage_matches(scrimmage_id)])
        return ids

    # Reads

    def scrimmage_match(self, match_id: str) -> ScrimmageMatch | None:
        """Returns the scrimmage match ``match_id``, or None."""
        row = self._db.execute(
            "SELECT match_id, scrimmage_id, idx, names, status, ranks, delivered"
            " FROM scrimmage_matches WHERE match_id = ?",
            (match_id,),
        ).fetchone()
        return None if row is None else _match(row)

    def scrimmage_matches(self, scrimmage_id: str) -> list[ScrimmageMatch]:
        """Returns the matches of a scrimmage, in the order played."""
        rows = self._db.execute(
            "SELECT match_id, scrimmage_id, idx, names, status, ranks, delivered"
            " FROM scrimmage_matches WHERE scrimmage_id = ? ORDER BY idx",
            (scrimmage_id,),
        ).fetchall()
        return [_match(r) for r in rows]

    def running_scrimmage_matches(self) -> list[str]:
        """Returns the scrimmage matches recorded as running."""
        rows = self._db.execute(
            "SELECT match_id FROM scrimmage_matches WHERE status = 'running'"
        ).fetchall()
        return [str(r[0]) for r in rows]

    def scrimmage_status(self, scrimmage_id: str) -> tuple[str, str | None] | None:
        """Returns (status, why it stopped) of a scrimmage, or None."""
        row = self._db.execute(
            "SELECT status, reason FROM ladder_scrimmages WHERE scrimmage_id = ?",
            (scrimmage_id,),
        ).fetchone()
        return None if row is None else (str(row[0]), row[1])


def scrimmages_page(
    db: Connection, name: str | None, size: int, token: str = ""
) -> Page[StoredScrimmage]:
    """Returns a page of at most ``size`` scrimmages (all, or those ``name`` asked
    for), newest first by the time asked then id, each with its matches: the first
    page, or the one after the page whose next token is ``token``. Raises
    BadPageToken for a token this list (the same name) did not give."""
    scope = json.dumps([name])
    after = key_of(token, SCRIMMAGES, (float, str), scope)
    where, params = "WHERE 1 = 1", list[object]()
    if name is not None:
        where, params = "WHERE name = ?", [name]
    if after is not None:
        where += " AND (created < ? OR (created = ? AND scrimmage_id > ?))"
        params += [after[0], after[0], after[1]]
    rows = db.execute(
        "SELECT scrimmage_id, name, version, opponents, players, planned, duplicate, sprt,"
        " created, status, reason, ended FROM ladder_scrimmages "
        + where
        + " ORDER BY created DESC, scrimmage_id LIMIT ?",
        (*params, size + 1),
    ).fetchall()
    ids = [str(r[0]) for r in rows[:size]]
    found: dict[str, list[ScrimmageMatch]] = {i: [] for i in ids}
    if ids:
        test, listed = among(db, ids)
        for m in db.execute(
            "SELECT match_id, scrimmage_id, idx, names, status, ranks, delivered"
            f" FROM scrimmage_matches WHERE scrimmage_id {test} ORDER BY scrimmage_id, idx",
            (listed,),
        ).fetchall():
            found[str(m[1])].append(_match(m))
    kept = [
        StoredScrimmage(
            ScrimmageRow(
                str(i),
                str(n),
                str(v),
                tuple(json.loads(str(o))),
                int(p),
                int(planned),
                bool(d),
                None if t is None else str(t),
                float(c),
            ),
            str(st),
            None if why is None else str(why),
            None if e is None else float(e),
            tuple(found.get(str(i), ())),
        )
        for i, n, v, o, p, planned, d, t, c, st, why, e in rows
    ]
    return page_of(kept, size, SCRIMMAGES, lambda k: (k.row.created, k.row.scrimmage_id), scope)


def _match(row: Sequence[object]) -> ScrimmageMatch:
    match_id, scrimmage_id, index, names, status, ranks, delivered = row
    return ScrimmageMatch(
        str(match_id),
        str(scrimmage_id),
        int(str(index)),
        tuple(json.loads(str(names))),
        str(status),
        tuple(json.loads(str(ranks))) if ranks else (),
        tuple(json.loads(str(delivered))) if delivered else (),
    )


def _version(db: Connection, name: str) -> str:
    row = db.execute("SELECT version FROM ladder_bots WHERE name = ?", (name,)).fetchone()
    return "" if row is None else str(row[0])
