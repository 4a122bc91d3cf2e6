"""What the page reads from the database: a thread of its own with a read-only
connection, so that the event loop never waits for the disk.

Every read is the storage layer's (``server.db``): the ladder's reads
(``server.db.ladder.reads.LadderReads``) and the stored matches
(``server.db.matches.stored_match``), over this connection, on an SQLite file or a
PostgreSQL database alike; each is one statement bounded in rows, or one snapshot.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ..db.connection import connect_read_only
from ..db.ladder.leagues import League, Move
from ..db.ladder.reads import BEST, LadderReads
from ..db.ladder.rows import ALL_PLAYERS, LadderMatch, Opponent, Standing, Tally, VersionLine
from ..db.matches import MatchRow, stored_match
from ..db.people import PeopleResult, people_results
from ..db.reader import Reader
from ..paging import Page

#: A bot's results against each opponent count its most recent matches only.
OPPONENT_MATCHES = 500


class Reads(Reader):
    """The page's reads, run one at a time on a thread with their own connection
    (read-only, opened at the first read)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(functools.partial(connect_read_only, path), "web-reader")
        self.path = path
        self._ladder: LadderReads | None = None

    def ladder(self) -> LadderReads:
        """Returns the store's reads over the reader's connection."""
        if self._ladder is None:
            self._ladder = LadderReads(self.db())
        return self._ladder

    # -- on the reader's thread ------------------------------------------------------

    def standings(self, by: str = BEST) -> dict[int, tuple[int, list[Standing]]]:
        """Returns (rated matches, standings) for all matches (key 0) and each player
        count that has rated matches, each bot by its ``by`` version (best or newest)."""
        ladder = self.ladder()
        with ladder.snapshot():
            scopes = [ALL_PLAYERS, *ladder.player_counts()]
            return {scope: ladder.standings(scope, by) for scope in scopes}

    def leagues(self, limit: int = 50) -> tuple[list[League], list[Move]]:
        """Returns the ladder's leagues (lowest first; none: leagues off) and up to
        ``limit`` moves between them, newest first."""
        ladder = self.ladder()
        with ladder.snapshot():
            return ladder.leagues(), ladder.moves(limit)

    def tallies(self, name: str) -> dict[int, Tally]:
        """Returns the bot's tallies per player count (counts it has not played left out)."""
        tallies = self.ladder().bot_tallies(name)  # all its versions
        return {players: tally for players, tally in tallies.items() if players}

    def versions(self, name: str) -> list[VersionLine]:
        """Returns the bot's rated versions over all matches (``LadderReads.versions``)."""
        return self.ladder().versions(name)

    def opponents(self, name: str, limit: int = OPPONENT_MATCHES) -> list[Opponent]:
        """Returns the bot's results against each opponent over its ``limit`` most
        recent finished matches, most games first."""
        return self.ladder().opponents(name, limit)

    def matches(
        self, name: str | None, limit: int
    ) -> tuple[list[LadderMatch], dict[str, tuple[int, ...]]]:
        """Returns up to ``limit`` ladder matches newest first (those ``name`` played
        in, or all), with the pizzas each seat delivered in those that ended."""
        ladder = self.ladder()
        with ladder.snapshot():
            rows = ladder.matches(name, limit)
            return rows, ladder.delivered([r.match_id for r in rows])

    def matches_page(
        self, name: str | None, size: int, token: str
    ) -> tuple[Page[LadderMatch], dict[str, tuple[int, ...]]]:
        """Returns a page of :meth:`matches`: the first, or the one after the page
        whose next token is ``token`` (``server.paging``), with the pizzas each seat
        delivered in those that ended.

        Raises BadPageToken for a token this list did not give.
        """
        ladder = self.ladder()
        with ladder.snapshot():
            page = ladder.matches_page(name, size, token)
            return page, ladder.delivered([r.match_id for r in page.items])

    def people(self) -> list[PeopleResult]:
        """Returns the people's table's results, in the order they ended."""
        return people_results(self.db())

    def stored(self, match_id: str) -> MatchRow | None:
        """Returns the match as the server stored it, record included, or None."""
        return stored_match(self.db(), match_id)
