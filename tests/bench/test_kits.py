"""The kits' benchmark at a tiny size: a real client (the Python greedy bot, run as a
command like any kit's bot) plays a deal pair against the random bot, one game in
each seat, and the figures come out whole."""

from __future__ import annotations

import sys

import pytest

from bench import kits

CLIENT = f"{sys.executable} -m mammamia bot greedy --server {{server}} --token {{token}}"


def test_a_deal_pair_is_played_in_both_seats_and_scored() -> None:
    result = kits.run(CLIENT, games=2, seed=3, parallel=2)
    assert result["client"] == CLIENT
    assert result["games"] == 2
    assert result["aborted"] == 0 and result["client_failures"] == 0
    assert 0.0 <= result["low"] <= result["win_rate"] <= result["high"] <= 1.0
    assert result["win_rate"] in (0.0, 0.25, 0.5, 0.75, 1.0)


def test_an_odd_count_of_games_is_refused() -> None:
    with pytest.raises(ValueError, match="--games 3"):
        kits.run(CLIENT, games=3)
