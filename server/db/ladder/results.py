"""The ladder's results, every ended match with each seat's result, a page at a time:
what the Ladder service's Results call returns and ``mammamia ladder export`` writes.

Pages follow ``server.paging``: newest first by creation time, then match id (the
order of every ladder match list, on the index ``ladder_matches_newest``), a
match's place in it fixed from its creation. Each page and its seats are read in
one snapshot, so a page never shows a match without its seats' results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, cast

from ...paging import Page, key_of, page_of
from ...status import MatchStatus
from ..connection import Connection, among, connect_read_only, is_url
from .reads import LadderReader, LadderReads

LISTING: Final = "ladder.results"


@dataclass(frozen=True, slots=True)
class ResultSeat:
    """One seat of an ended ladder match: its rank (None without a result), pizzas
    delivered (None without a result) and round 1's playing position (None: not
    known)."""

    seat: int
    name: str
    rank: int | None
    delivered: int | None
    position: int | None
    version: str = ""  # the version of the bot that played the seat ("": the default)


@dataclass(frozen=True, slots=True)
class ResultRow:
    """An ended ladder match (finished or aborted) and its seats, in seat order;
    times are UNIX seconds, ``finish_order`` None for a match with no result."""

    match_id: str
    status: MatchStatus
    players: int
    created: float
    ended: float | None
    finish_order: int | None
    rated: bool
    commitment: str
    set_id: str | None
    set_index: int
    void_reason: str | None
    seats: tuple[ResultSeat, ...]


_MATCHES = (
    "SELECT match_id, status, players, created, ended, finish_order, rated, commitment,"
    " set_id, set_index, void_reason FROM ladder_matches"
    " WHERE status IN ('finished', 'aborted'){after}"
    " ORDER BY created DESC, match_id LIMIT ?"
)


class LadderResults:
    """The ladder's results over one connection (used by one thread at a time)."""

    def __init__(self, db: Connection) -> None:
        self._db = db
        self._reads = LadderReads(db)

    def close(self) -> None:
        """Closes the connection."""
        self._db.close()

    def page(self, size: int, token: str = "") -> Page[ResultRow]:
        """Returns a page of at most ``size`` ended matches, newest first: the first,
        or the one after the page whose next token is ``token``.

        Raises BadPageToken for a token this list did not give.
        """
        after = key_of(token, LISTING, (float, str))
        where, params = "", cast(tuple[object, ...], ())
        if after is not None:
            where = " AND (created < ? OR (created = ? AND match_id > ?))"
            params = (after[0], after[0], after[1])
        with self._reads.snapshot():
            rows = self._db.execute(_MATCHES.format(after=where), (*params, size + 1)).fetchall()
            page = page_of(rows, size, LISTING, lambda r: (float(r[3]), str(r[0])))
            seats = self._seats([str(r[0]) for r in page.items])
        return Page(
            [
                ResultRow(
                    match_id=str(r[0]),
                    status=MatchStatus(r[1]),
                    players=int(r[2]),
                    created=float(r[3]),
                    ended=None if r[4] is None else float(r[4]),
                    finish_order=None if r[5] is None else int(r[5]),
                    rated=bool(r[6]),
                    commitment=r[7] or "",
                    set_id=r[8],
                    set_index=int(r[9] or 0),
                    void_reason=r[10],
                    seats=tuple(seats.get(str(r[0]), ())),
                )
                for r in page.items
            ],
            page.next_token,
        )

    def _seats(self, match_ids: Sequence[str]) -> dict[str, list[ResultSeat]]:
        if not match_ids:
            return {}
        test, listed = among(self._db, match_ids)
        seats: dict[str, list[ResultSeat]] = {}
        for match_id, seat, name, rank, delivered, position, version in self._db.execute(
            "SELECT match_id, seat, name, rank, delivered, position, version FROM ladder_results"
            f" WHERE match_id {test} ORDER BY match_id, seat",
            (listed,),
        ):
            seats.setdefault(match_id, []).append(
                ResultSeat(
                    int(seat),
                    name,
                    None if rank is None else int(rank),
                    None if delivered is None else int(delivered),
                    None if position is None else int(position),
                    str(version or ""),
                )
            )
        return seats

    def records(self, match_ids: Sequence[str]) -> dict[str, str]:
        """Returns the stored game records (JSON text) of those of ``match_ids`` that
        have one."""
        if not match_ids:
            return {}
        test, listed = among(self._db, match_ids)
        return {
            str(match_id): str(record)
            for match_id, record in self._db.execute(
                f"SELECT id, record FROM matches WHERE id {test} AND record IS NOT NULL",
                (listed,),
            )
        }


def open_read_only(db: str) -> LadderResults:
    """Returns the results of the database ``db`` (an SQLite file, opened read-only,
    or a ``postgresql://`` URL, whose every transaction is made read-only); raises
    what ``server.db.connection.ERRORS`` names when it cannot be opened."""
    connection = connect_read_only(db)
    if is_url(db):
        # Every statement reads only, inside a snapshot or not.
        connection.execute("SET default_transaction_read_only = on")
    return LadderResults(connection)


async def read_page(reader: LadderReader, size: int, token: str = "") -> Page[ResultRow]:
    """Returns :meth:`LadderResults.page`, read on ``reader``'s thread.

    Raises BadPageToken for a token this list did not give.
    """
    return await reader.run(lambda: LadderResults(reader.db()).page(size, token))
