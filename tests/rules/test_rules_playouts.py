"""Seeded random playouts: 2,000 games over 2 to 5 players, checked at every step.

At every step: every card is where exactly one pile says (conservation), legal
actions exist until the game is over, and the chosen action applies. On a sample
of steps, every legal action applies on a copy and views are checked against
hidden changes (R-VIEW-3). Every game replays from its written record, and the
same seed plays the same game.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from rules_support import hide_from

from mammamia import (
    COLOURS,
    INGREDIENTS,
    MAMMA_MIA,
    Action,
    State,
    loads,
    new_game,
    record_of,
    view_of,
)
from mammamia.cards import ORDERS_BY_COLOUR, ingredient_deck
from mammamia.dump import state_dump

GAMES = 2000
CHUNKS = 8
SAMPLE = 0.03
"""Share of steps where every legal action is tried and the views are checked."""
DUMPED = 10
"""One game in DUMPED compares the state dump of every step with its replay."""


def cards_in_play(state: State) -> tuple[Counter[str], Counter[str]]:
    """Returns (ingredient and Mamma Mia! cards, order cards) counted over every pile."""
    ings: Counter[str] = Counter()
    orders: Counter[str] = Counter()
    unrevealed = state.oven[state.revealed :] if state.phase == "resolve" else state.oven
    for card in [*state.supply, *unrevealed, *state.used]:
        (orders if "-" in card and card != MAMMA_MIA else ings)[card] += 1
    for seat in range(state.players):
        for k, n in enumerate(state.hand_ings[seat]):
            ings[INGREDIENTS[k]] += n
        orders.update(state.hand_orders[seat])
        orders.update(state.waiters[seat])
        orders.update(state.delivered[seat])
    for k, n in enumerate(state.table):
        ings[INGREDIENTS[k]] += n
    if state.holder is not None:
        ings[MAMMA_MIA] += 1
    if state.deciding is not None:  # revealed, its owner not yet decided
        orders[state.deciding] += 1
    return ings, orders


def check_step(
    state: State,
    want_ings: Counter[str],
    want_orders: Counter[str],
    legal: tuple[Action, ...],
    rng: random.Random,
    sampled: bool,
) -> None:
    ings, orders = cards_in_play(state)
    assert ings == want_ings
    assert orders == want_orders
    assert all(n >= 0 for h in state.hand_ings for n in h)
    assert all(state.hand_size(s) <= 7 for s in range(state.players))
    assert legal, f"no legal action in phase {state.phase}"
    assert state.legal_actions() == legal
    if state.phase == "resolve":
        assert legal[-1].bake is False  # type: ignore[union-attr]  # R-RES-8
    tried = legal if sampled else (rng.choice(legal),)
    for action in tried:
        child = state.child(action)
        assert child.to_act is not None or child.is_over
    if sampled:
        assert len(set(legal)) == len(legal)
        for seat in (None, *range(state.players)):
            view = view_of(state, seat)
            assert view_of(hide_from(state, seat, rng), seat) == view


def check_end(state: State) -> None:
    scores = [(len(state.delivered[s]), sum(state.hand_ings[s])) for s in range(state.players)]
    best = max(scores)
    assert state.winners() == [s for s in range(state.players) if scores[s] == best]
    ranks = state.ranking()
    for a in range(state.players):
        for b in range(state.players):
            assert (ranks[a] < ranks[b]) == (scores[a] > scores[b])
    assert state.legal_actions() == ()


def play_game(seed: int) -> None:
    players = 2 + (seed // CHUNKS) % 4  # every chunk plays every player count
    colours = random.Random(-seed).sample(COLOURS, players)
    state = new_game(players, seed=seed, colours=colours)
    start = state.copy()
    want_ings = Counter(ingredient_deck(players)) + Counter({MAMMA_MIA: 1})
    want_orders = Counter(o.id for c in colours for o in ORDERS_BY_COLOUR[c])
    rng = random.Random(seed)
    dumped = seed % DUMPED == 0
    dumps = [state_dump(state)] if dumped else []
    actions: list[tuple[int, Action]] = []
    while not state.is_over:
        legal = state.legal_actions()
        check_step(state, want_ings, want_orders, legal, rng, rng.random() < SAMPLE)
        seat = state.to_act
        assert seat is not None
        action = rng.choice(legal)
        actions.append((seat, action))
        state.apply(action)
        if dumped:
            dumps.append(state_dump(state))
        assert len(actions) < 2000, "the game does not end"
    check_end(state)
    final = state_dump(state)

    # The written record replays to the same states; it can be written from the
    # game's start or from its end.
    record = loads(record_of(start if seed % 2 else state, actions, seed=seed).dumps())
    if dumped:
        assert [state_dump(s) for s in record.states()] == dumps
    else:
        assert state_dump(record.replay()) == final

    # The same seed gives the same game, shuffles included.
    if seed % DUMPED == 1:
        again = new_game(players, seed=seed, colours=colours)
        for _, action in actions:
            again.apply(action)
        assert state_dump(again) == final and again.events == state.events


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_playouts(chunk: int) -> None:
    for seed in range(chunk, GAMES, CHUNKS):
        play_game(seed)
