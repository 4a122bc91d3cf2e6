"""Every bot's rating over time, for the bot page's plot.

The store keeps each bot's current rating only. Ratings are a pure function of the
rated results in finish order (``server.ladder.ratings``), so the history is
rebuilt by applying :func:`~server.ladder.ratings.rate` to them again, as the
ladder did: incrementally (each read goes on from the last result it applied) and
bounded (at most ``BATCH`` results per read, the last ``POINTS`` points per bot).
It runs on the page's reader thread (``server.web.reads``), reading through the
storage layer (``LadderReads.rated_seats``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final

from ..db.ladder.reads import LadderReads
from ..db.ladder.rows import player_of
from ..ladder.ratings import Rating, initial, rate

#: Rated results applied per read at most (a long history catches up over reads).
BATCH: Final = 20_000
#: Points kept per bot: its most recent rated matches.
POINTS: Final = 300


@dataclass(frozen=True, slots=True)
class Point:
    """A bot's rating after one of its rated matches (``ended``: UNIX time)."""

    ended: float
    mu: float
    sigma: float

    @property
    def rating(self) -> float:
        """Returns the conservative rating ``mu - 3 sigma``, as the standings rank by."""
        return self.mu - 3.0 * self.sigma


class RatingsHistory:
    """Ratings replayed from the rated results; used by the reader's thread only."""

    def __init__(self) -> None:
        self._voids = 0  # the voided matches when the replay began
        self._reset()

    def _reset(self) -> None:
        self._ratings: dict[str, Rating] = {}
        self._points: dict[str, deque[Point]] = {}
        self._last = -1  # finish_order of the last result applied
        self.behind = False  # True while results wait beyond the last batch

    def catch_up(self, ladder: LadderReads) -> None:
        """Applies the rated results after the last one applied (``BATCH`` at most);
        starts again from the first once a match was voided since (the ratings were
        replayed without it)."""
        voids = ladder.voids()
        if voids != self._voids:
            self._reset()
            self._voids = voids
        matches: list[tuple[int, float, list[tuple[str, int]]]] = []
        for seat in ladder.rated_seats(self._last, BATCH):
            if not matches or matches[-1][0] != seat.finish_order:
                matches.append((seat.finish_order, seat.ended, []))
            matches[-1][2].append((seat.name, seat.rank))
        for order, ended, seats in matches:
            # Rated per version (a player), plotted per bot: each point is the rating
            # of the version that played the match.
            players = [n for n, _ in seats]
            before = [self._ratings.get(n, initial()) for n in players]
            for label, after in zip(players, rate(before, [k for _, k in seats]), strict=True):
                self._ratings[label] = after
                name = player_of(label)[0]
                points = self._points.get(name)
                if points is None:
                    points = self._points[name] = deque(maxlen=POINTS)
                points.append(Point(ended, after.mu, after.sigma))
            self._last = order
        self.behind = len(matches) >= BATCH

    def of(self, ladder: LadderReads, name: str) -> list[Point]:
        """Returns the bot's rating after each of its last ``POINTS`` rated matches,
        oldest first, once the results stored so far are applied (up to a batch)."""
        self.catch_up(ladder)
        return list(self._points.get(name, ()))
