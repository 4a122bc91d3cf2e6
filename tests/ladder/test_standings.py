"""The standings' lines are computed once, and every reader shows the same ones."""

from __future__ import annotations

import pytest

from server.db.ladder.rows import Standing
from server.ladder import wire
from server.ladder.confidence import WIDTH, p_better
from server.ladder.ratings import Rating
from server.ladder.standings import lines
from server.web.api import standing_json

TABLE = [
    Standing(1, "counter", 21.0, 27.0, 2.0, 40, 25, 2.5),
    Standing(2, "greedy", 18.5, 25.0, 2.1666, 38, 10, 1.75),
    Standing(3, "random", 2.0, 20.0, 6.0, 5, 0, 0.2),
]


def test_a_line_is_the_standing_with_its_interval_and_the_odds_over_the_next() -> None:
    got = lines(TABLE)
    assert [line.standing for line in got] == TABLE
    assert WIDTH == 2.0  # the one interval the docs state (docs/ratings.md)
    for line in got:
        s = line.standing
        assert (line.low, line.high) == pytest.approx((s.mu - 2 * s.sigma, s.mu + 2 * s.sigma))
    assert got[0].p_better == p_better(Rating(27.0, 2.0), Rating(25.0, 2.1666))
    assert got[-1].p_better is None
    assert lines([]) == []


def test_the_ladder_service_and_the_web_page_show_the_same_lines() -> None:
    computed = [(line.low, line.high, line.p_better) for line in lines(TABLE)]
    reply = wire.standings_response(9, TABLE)
    sent = [
        (m.low, m.high, m.p_better if m.HasField("p_better") else None) for m in reply.standings
    ]
    assert reply.matches_finished == 9 and sent == computed
    page = [standing_json(line) for line in lines(TABLE)]
    assert [(row["low"], row["high"], row["p_better"]) for row in page] == computed
    assert [row["name"] for row in page] == [s.name for s in TABLE]
