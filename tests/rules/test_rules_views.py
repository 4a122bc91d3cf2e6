"""What each seat and a spectator may know (docs/rules.md section 7, R-VIEW-*, and R-TURN-9)."""

from __future__ import annotations

import dataclasses
import random

import pytest
from rules_support import bake, early, hide_from, play, replay, then

from mammamia import INGREDIENTS, RESOLVE, View, public_events, view_of

# Round 1 resolution: red baked red-mushroom with a salami from hand, yellow is
# asked about yellow-pepper. Red holds the Mamma Mia! card.
SCENE = then(
    early("red-mushroom", "yellow-pepper"),
    play(0, "2 pineapple", draw="supply"),
    bake(0, hand="salami"),
)
# Round 1 after four turns: red to play, the supply holds only the Mamma Mia! card.
TURNS = early("red-mushroom", "yellow-pepper")


@pytest.mark.parametrize("record", [SCENE, TURNS], ids=["resolution", "turns"])
@pytest.mark.parametrize("seat", [None, 0, 1], ids=["spectator", "seat-0", "seat-1"])
def test_R_VIEW_3_views_do_not_change_with_hidden_cards(
    record: dict[str, object], seat: int | None
) -> None:
    state = replay(record)
    rng = random.Random(3)
    for _ in range(20):
        changed = hide_from(state, seat, rng)
        assert view_of(changed, seat) == view_of(state, seat)


def test_R_VIEW_4_a_changed_hand_shows_in_its_own_view() -> None:
    # The non-interference test above could pass with views that show nothing: the
    # same change must be seen by the seat whose cards changed.
    state = replay(TURNS)
    changed = hide_from(state, 0, random.Random(3))
    assert view_of(changed, 1) != view_of(state, 1)


def test_R_VIEW_1_public_facts_in_every_view() -> None:
    state = replay(SCENE)
    views = [view_of(state, seat) for seat in (None, 0, 1)]
    for view in views:
        assert view.phase == RESOLVE and view.round == 1 and view.to_act == 1
        assert view.deciding == "yellow-pepper"
        assert view.oven[:7] == ("mushroom",) * 6 + ("red-mushroom",)
        assert view.revealed == 14
        assert view.table == (0, 0, 2, 6, 0)
        assert sorted(view.used) == ["mushroom"] * 4 + ["salami"]
        assert view.mamma_mia_holder == 0
        assert [s.delivered for s in view.seats] == [("red-mushroom",), ()]
        assert [e.kind for e in view.history].count("turn") == 5
        baked = [e for e in view.history if e.kind == "baked"]
        assert [(e.seat, e.order, e.hand) for e in baked] == [(0, "red-mushroom", (1, 0, 0, 0, 0))]
    assert views[0].history == views[1].history == views[2].history == public_events(state)


def test_R_TURN_9_sizes_and_draws_are_public() -> None:
    state = replay(TURNS)
    spectator = view_of(state, None)
    assert spectator.supply_size == 1
    assert [(s.hand_size, s.orders_in_hand, s.waiter_size) for s in spectator.seats] == [
        (7, 0, 7),
        (7, 0, 7),
    ]
    assert [s.ingredients_in_hand for s in spectator.seats] == [7, 7]
    turns = [e for e in spectator.history if e.kind == "turn"]
    assert [(e.seat, e.ingredient, e.count, e.order, e.draw, e.drawn) for e in turns] == [
        (0, "mushroom", 6, "red-mushroom", "supply", 7),
        (1, "pepper", 6, "yellow-pepper", "supply", 7),
        (0, "olive", 7, None, "supply", 7),
        (1, "salami", 7, None, "supply", 7),
    ]


def test_R_VIEW_2_own_hand_and_waiter_contents() -> None:
    state = replay(TURNS)
    mine = view_of(state, 0)
    assert dict(zip(INGREDIENTS, mine.hand, strict=True)) == {
        "salami": 1,
        "pineapple": 2,
        "mushroom": 2,
        "pepper": 2,
        "olive": 0,
    }
    assert mine.hand_orders == ()
    # The waiter's contents, never its order (R-VIEW-3): sorted.
    assert mine.waiter == tuple(sorted(state.waiters[0]))
    assert mine.legal == state.legal_actions()
    assert view_of(state, 1).legal == ()


def test_R_VIEW_4_spectator_view_holds_no_private_cards() -> None:
    state = replay(TURNS)
    spectator = view_of(state, None)
    assert spectator.hand == (0, 0, 0, 0, 0)
    assert spectator.hand_orders == () and spectator.waiter == () and spectator.legal == ()
    # No field holds the supply's cards: only its size.
    names = {f.name for f in dataclasses.fields(View)}
    assert "supply" not in names and "supply_size" in names


def test_R_VIEW_4_a_seat_that_is_not_asked_gets_no_options() -> None:
    state = replay(SCENE)
    assert view_of(state, 0).legal == ()
    assert view_of(state, 1).legal == state.legal_actions()


def test_view_refuses_a_seat_outside_the_game() -> None:
    with pytest.raises(ValueError, match="seat"):
        view_of(replay(TURNS), 2)
