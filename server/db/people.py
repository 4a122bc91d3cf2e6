"""The people's table's results, written and read (revision 0014).

One row per finished match a person played on the people's table (``mammamia
serve --people-table``): its seats (each a kind and a name) and their ranks. The
table's ratings are a replay of the rows in order (``server.web.people``); nothing
here touches the bots' ladder. :class:`PeopleStore` writes, on the web page's
writer thread; :func:`people_results` reads, on the page's reader thread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from . import schema
from .connection import Connection, connect, transaction

#: The kinds of a seat on the people's table.
PERSON: Final = "person"
BUILTIN: Final = "builtin"
LADDER: Final = "ladder"
KINDS: Final = (PERSON, BUILTIN, LADDER)


@dataclass(frozen=True, slots=True)
class PeopleResult:
    """One finished match of the people's table: its id, when it ended (UNIX
    seconds), its seats in seat order as (kind, name), and their ranks (1 best)."""

    match_id: str
    ended: float
    seats: tuple[tuple[str, str], ...]
    ranks: tuple[int, ...]


class PeopleStore:
    """The people's table's results in one database (an SQLite file or a
    ``postgresql://`` URL). Raises SchemaError when the database cannot be brought
    to this server's schema, and what ``server.db.connection.ERRORS`` names when it
    cannot be reached."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        schema.upgrade(self.path)
        self._db = connect(self.path)

    def close(self) -> None:
        """Closes the connection."""
        self._db.close()

    def add(self, result: PeopleResult) -> bool:
        """Stores a finished match's result; returns False (changing nothing) when it
        was stored already. Raises ValueError for seats of an unknown kind or ranks
        that are not one per seat."""
        if len(result.seats) != len(result.ranks) or any(k not in KINDS for k, _ in result.seats):
            raise ValueError(f"people's table: bad result of match {result.match_id!r}")
        with transaction(self._db) as db:
            cur = db.execute(
                "INSERT INTO people_results (match_id, ended, seats, ranks) VALUES (?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (
                    result.match_id,
                    result.ended,
                    json.dumps([list(seat) for seat in result.seats]),
                    json.dumps(list(result.ranks)),
                ),
            )
            return cur.rowcount == 1


def people_results(db: Connection) -> list[PeopleResult]:
    """Returns every result of the people's table, in the order they ended."""
    rows = db.execute(
        "SELECT match_id, ended, seats, ranks FROM people_results ORDER BY ended, match_id"
    ).fetchall()
    return [
        PeopleResult(
            str(match_id),
            float(ended),
            tuple((str(kind), str(name)) for kind, name in json.loads(seats)),
            tuple(int(rank) for rank in json.loads(ranks)),
        )
        for match_id, ended, seats, ranks in rows
    ]
