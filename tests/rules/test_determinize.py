"""Determinization (mammamia.determinize): samples consistent with one seat's view.

Every sample is a complete game that replays the public history to the very view
the seat was given (checked here through a game record, parsed and replayed like
any other); the sampler reads nothing but the view, so two games that differ only
in what the seat cannot see (R-VIEW-3) give the same samples for the same seed.
"""

from __future__ import annotations

import random

import pytest
from rules_support import hide_from

from bots.counter import CounterBot
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from mammamia import RESOLVE, Action, State, View, loads, new_game, record_of, view_of
from mammamia.determinize import DeterminizationError, Sampler, determinize

GAMES_PER_COUNT = 3
EVERY = 8
VARIANTS = 5
"""Positions sampled: one decision in EVERY, seen by the seat asked or another."""


Position = tuple[State, int, list[tuple[int, Action]]]


def positions(players: int, games: int, seed: int) -> list[Position]:
    """Returns (state, seat, actions so far) from games between the built-in bots:
    every sixth decision, seen by a seat chosen at random (not always the one asked)."""
    rng = random.Random(seed)
    out = []
    for g in range(games):
        state = new_game(players, seed=seed * 100 + g)
        bots = [rng.choice([CounterBot, GreedyBot, RandomBot])() for _ in range(players)]
        for i, bot in enumerate(bots):
            bot.rng = random.Random(f"{seed}/{g}/{i}")
        actions: list[tuple[int, Action]] = []
        while not state.is_over:
            seat = state.to_act
            assert seat is not None
            view = view_of(state, seat)
            if len(actions) % EVERY == g % EVERY:
                out.append((state.copy(), rng.randrange(players), list(actions)))
            bot = bots[seat]
            action = bot.resolve(view) if state.phase == RESOLVE else bot.turn(view)
            state.apply(action)
            actions.append((seat, action))
    return out


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_samples_replay_to_the_seats_view(players: int) -> None:
    rng = random.Random(players)
    sampled = 0
    for state, seat, actions in positions(players, GAMES_PER_COUNT, seed=players):
        view = view_of(state, seat)
        sampler = Sampler(view)
        # Fresh samples, and variants of them (the supply's undrawn order and the
        # waiters drawn again), each checked in full.
        samples = []
        for _ in range(2):
            samples.append(sampler.sample(rng))
            samples += [sampler.variant(rng) for _ in range(VARIANTS)]
        for sample in samples:
            assert view_of(sample, seat) == view
        # The first through a written record, parsed and replayed like any other: its
        # deal holds the game's cards and each reshuffle its round's supply.
        record = record_of(samples[0], actions)
        assert view_of(loads(record.dumps()).replay(), seat) == view
        sampled += len(samples)
    print(f"{sampled} samples")
    assert sampled >= 300


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_samples_hide_what_the_seat_cannot_see(players: int) -> None:
    # Samples are not the real game: across a few of them, other hands and the
    # supply's order vary, while the seat's own hand never does.
    rng = random.Random(10 + players)
    varied = 0
    for state, seat, _ in positions(players, 2, seed=20 + players)[3::4]:
        view = view_of(state, seat)
        sampler = Sampler(view)
        hidden = set()
        for _ in range(6):
            sample = sampler.sample(rng)
            assert sample.hand_ings[seat] == state.hand_ings[seat]
            hidden.add(
                (
                    tuple(tuple(h) for i, h in enumerate(sample.hand_ings) if i != seat),
                    tuple(sample.supply),
                )
            )
        varied += len(hidden) > 1
    assert varied >= 2


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_non_interference_same_view_same_samples(players: int) -> None:
    # Two games that differ only in what the seat cannot see: the real one, and one
    # the sampler itself dealt (another deal with the same public history), or the
    # real one with hidden cards swapped (not a consistent game, but the same view).
    rng = random.Random(30 + players)
    checked = 0
    for state, seat, _ in positions(players, 2, seed=30 + players)[2::7]:
        view = view_of(state, seat)
        other = Sampler(view).sample(rng)
        swapped = hide_from(state, seat, rng)
        assert view_of(other, seat) == view == view_of(swapped, seat)
        first = [_hidden(Sampler(view_of(state, seat)).sample(random.Random(s))) for s in range(3)]
        for twin in (other, swapped):
            again = [
                _hidden(Sampler(view_of(twin, seat)).sample(random.Random(s))) for s in range(3)
            ]
            assert again == first
        checked += _hidden(other) != _hidden(state)
    assert checked >= 2


def _hidden(state: State) -> tuple[object, ...]:
    return (
        tuple(tuple(h) for h in state.hand_ings),
        tuple(state.supply),
        tuple(tuple(w) for w in state.waiters),
        tuple(tuple(o) for o in state.hand_orders),
    )


def test_samples_deal_what_the_first_turns_put_in() -> None:
    # A seat's first turn comes before any draw of its own: what it put onto the oven
    # was dealt to it, in every sample (the replay would refuse it otherwise, and the
    # deal is the record's own).
    rng = random.Random(5)
    checked = 0
    for state, seat, _ in positions(3, 3, seed=5)[::4]:
        view = view_of(state, seat)
        sample = determinize(view, rng)
        first = {}
        for event in view.history:
            if event.kind == "turn" and event.seat not in first:
                first[event.seat] = event
        for other, event in first.items():
            if event.ingredient is not None:
                assert sample.deal["hands"][other].count(event.ingredient) >= event.count
                checked += 1
    assert checked >= 20


def test_the_same_seed_gives_the_same_sample() -> None:
    state, seat, _ = positions(4, 1, seed=8)[7]
    view = view_of(state, seat)
    a = determinize(view, 11)
    b = determinize(view, random.Random(11))
    assert _hidden(a) == _hidden(b) and a.deal == b.deal and a.reshuffles == b.reshuffles


def test_a_spectators_view_or_a_broken_history_is_refused() -> None:
    state = new_game(3, seed=1)
    with pytest.raises(DeterminizationError, match="spectator"):
        Sampler(view_of(state, None))
    view = view_of(state, 0)
    broken = View(
        **{**{f: getattr(view, f) for f in view.__dataclass_fields__}, "history": view.history[1:]}
    )
    with pytest.raises(DeterminizationError, match="round 1"):
        Sampler(broken)
    lying = View(
        **{
            **{f: getattr(view, f) for f in view.__dataclass_fields__},
            "supply_size": view.supply_size + 1,
        }
    )
    with pytest.raises(DeterminizationError, match="supply"):
        Sampler(lying)
