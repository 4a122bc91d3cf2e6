"""Builders for rules scenarios: stacked game records, short action forms, dump lookups.

A scenario starts from a small stacked record (docs/record.md, ``deal``): the test names
only the cards that matter (the hands, the top of the supply, the top of each
waiter) and the builder completes the piles with the remaining cards in canonical
order, so every record is a legal deal of R-SETUP-2.
"""

from __future__ import annotations

import copy
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from mammamia import (
    COLOURS,
    INGREDIENTS,
    MAMMA_MIA,
    IllegalActionError,
    RecordError,
    State,
    action_from_json,
    parse,
)
from mammamia.cards import ORDERS_BY_COLOUR, ingredient_deck
from mammamia.dump import state_dump

Json = dict[str, Any]

RULE_ID = re.compile(r"R-[A-Z]+-\d+")
"""A rule id of docs/rules.md, such as ``R-TURN-4``."""


def rule_of(name: str) -> str:
    """Returns the rule id a case name starts with (``R-TURN-4-...`` gives ``R-TURN-4``)."""
    found = RULE_ID.match(name)
    assert found, f"{name!r} does not start with a rule id"
    return found.group()


def cards(text: str) -> list[str]:
    """Returns the card list of a short description such as ``"2 salami, olive"``."""
    out: list[str] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        count, _, name = part.partition(" ")
        if name:
            out += [name] * int(count)
        else:
            out.append(count)
    return out


def ings(**counts: int) -> dict[str, int]:
    """Returns a full ingredient map (all five kinds, canonical order) from keyword counts."""
    unknown = set(counts) - set(INGREDIENTS)
    assert not unknown, unknown
    return {k: counts.get(k, 0) for k in INGREDIENTS}


def stacked(
    hands: Sequence[str],
    supply: str = "",
    *,
    colours: Sequence[str] | None = None,
    first_player: int = 0,
    waiters: Sequence[str] | None = None,
    mamma_mia_at: int | None = None,
    reshuffles: list[list[str]] | None = None,
    actions: Iterable[Json] = (),
    seed: int = 0,
) -> Json:
    """Returns a record whose deal is ``hands`` (one description per seat), the supply
    topped by ``supply`` and the waiters topped by ``waiters``.

    The rest of the supply follows in canonical order; the Mamma Mia! card goes at
    index ``mamma_mia_at`` of the supply (top first), at the bottom by default.
    """
    players = len(hands)
    colours = list(colours or COLOURS[:players])
    dealt = [cards(h) for h in hands]
    top = cards(supply)
    rest = Counter(ingredient_deck(players))
    rest.subtract(c for pile in [*dealt, top] for c in pile)
    assert all(n >= 0 for n in rest.values()), f"too many cards: {-rest}"
    pile = top + [k for k in INGREDIENTS for _ in range(rest[k])]
    pile.insert(len(pile) if mamma_mia_at is None else mamma_mia_at, MAMMA_MIA)
    tops = [cards(w) for w in (waiters or [""] * players)]
    deal_waiters = []
    for colour, top_orders in zip(colours, tops, strict=True):
        ids = [o.id for o in ORDERS_BY_COLOUR[colour]]
        deal_waiters.append(top_orders + [i for i in ids if i not in top_orders])
    record: Json = {
        "format": "mammamia-record/1",
        "players": players,
        "colours": colours,
        "first_player": first_player,
        "seed": seed,
        "deal": {"hands": dealt, "supply": pile, "waiters": deal_waiters},
        "actions": list(actions),
    }
    if reshuffles is not None:
        record["reshuffles"] = reshuffles
    return record


def then(record: Json, *actions: Json) -> Json:
    """Returns a copy of ``record`` with ``actions`` appended."""
    out = copy.deepcopy(record)
    out["actions"] += list(actions)
    return out


# -- actions in the record's form (docs/record.md) ----------------------------------


def play(seat: int, what: str, order: str | None = None, draw: str | None = None) -> Json:
    """Returns a turn that plays ``what`` (e.g. ``"2 salami"``), maybe an order, then draws."""
    count, _, kind = what.partition(" ")
    out: Json = {"seat": seat, "play": {"ingredient": kind, "count": int(count)}}
    if order is not None:
        out["order"] = order
    if draw is not None:
        out["draw"] = draw
    return out


def pass_(seat: int, draw: str | None = None) -> Json:
    """Returns a turn that plays nothing (R-TURN-3), then draws from ``draw``."""
    out: Json = {"seat": seat, "pass": True}
    if draw is not None:
        out["draw"] = draw
    return out


def bake(seat: int, ingredient: str | None = None, hand: str | None = None) -> Json:
    """Returns a resolution decision to bake, naming the kind and the hand cards added."""
    resolve: Json = {"bake": True}
    if ingredient is not None:
        resolve["ingredient"] = ingredient
    if hand:
        resolve["hand"] = dict(Counter(cards(hand)))
    return {"seat": seat, "resolve": resolve}


def decline(seat: int) -> Json:
    """Returns the resolution decision not to bake."""
    return {"seat": seat, "resolve": {"bake": False}}


# -- two scenes that reach the resolution of round 1 ------------------------------


def early(
    order0: str,
    order1: str,
    *,
    red: str = "mushroom",
    refills: str = "olive, salami",
    last: str = "salami, 2 mushroom, 2 pepper, 2 pineapple",
) -> Json:
    """Returns a two-player scene (red seat 0, yellow seat 1) four turns in.

    Red plays six ``red`` and ``order0``, yellow six pepper and ``order1``; each refills
    seven cards from the supply and plays them all (seven of each kind in ``refills``);
    red then holds ``last`` and the supply holds only the Mamma Mia! card, so red's
    next draw ends the round. Oven: 6 red-kind, order0, 6 pepper, order1, 7, 7.
    """
    first, second = refills.split(", ")
    return stacked(
        [f"6 {red}", "6 pepper"],
        f"7 {first}, 7 {second}, {last}",
        waiters=[order0, order1],
        actions=[
            play(0, f"6 {red}", order0, "supply"),
            play(1, "6 pepper", order1, "supply"),
            play(0, f"7 {first}", None, "supply"),
            play(1, f"7 {second}", None, "supply"),
        ],
    )


def late(order0: str, order1: str = "yellow-pepper") -> Json:
    """Returns a two-player scene in resolution, yellow asked about ``order1``.

    Oven: 6 mushroom, 6 pepper, order1, 6 salami, order0, 7 olive, 2 salami. Yellow
    (holding 7 pineapple) is asked whether to add the pineapple ``order1`` misses;
    red holds 2 mushroom, 2 pepper, 1 pineapple, 1 olive.
    """
    return stacked(
        ["6 mushroom", "6 pepper"],
        "6 salami, 7 olive, 2 salami, 2 mushroom, 2 pepper, pineapple",
        waiters=[order0, order1],
        actions=[
            play(0, "6 mushroom", None, "supply"),
            play(1, "6 pepper", order1, "supply"),
            play(0, "6 salami", order0, "supply"),
            play(1, "7 olive", None, "supply"),
            play(0, "2 salami", None, "supply"),
        ],
    )


# -- hidden information (R-VIEW-3) ---------------------------------------------------


def hide_from(state: State, seat: int | None, rng: random.Random) -> State:
    """Returns a copy of ``state`` that differs only in what ``seat`` may not know
    (R-VIEW-3): the supply's order, the order of every waiter, and the cards of every
    other hand and waiter (swapped between them, keeping each hand's public sizes)."""
    other = state.copy()
    rng.shuffle(other.supply)
    for w in other.waiters:
        rng.shuffle(w)
    others = [i for i in range(state.players) if i != seat]
    # Swap one ingredient kind for another in another seat's hand: its size stays.
    for i in others:
        held = [k for k in range(5) if other.hand_ings[i][k]]
        if held:
            k = rng.choice(held)
            other.hand_ings[i][k] -= 1
            other.hand_ings[i][rng.choice([j for j in range(5) if j != k])] += 1
    # Swap the top order of another seat's waiter with an order in its hand.
    for i in others:
        if other.waiters[i] and other.hand_orders[i]:
            other.waiters[i][0], other.hand_orders[i][0] = (
                other.hand_orders[i][0],
                other.waiters[i][0],
            )
            other.hand_orders[i].sort()
    return other


# -- replay and inspect -------------------------------------------------------------


def replay(record: Json) -> State:
    """Returns the state after every action of ``record``."""
    return parse(copy.deepcopy(record)).replay()


def get(dump: Json, path: str) -> Any:
    """Returns the value at a dotted path of a state dump, e.g. ``seats.0.hand.orders``;
    a path ending in ``#`` gives the length of the value (``supply#``)."""
    if path.endswith("#"):
        return len(get(dump, path[:-1]))
    value: Any = dump
    for key in path.split("."):
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def dump(state: State) -> Json:
    """Returns the state dump of ``state`` (docs/record.md)."""
    return state_dump(state)


@dataclass(frozen=True)
class Case:
    """A scenario: the record that sets the scene, the action taken, the dump fields after.

    ``before`` are dump fields checked before the action, so a scene that drifts
    from what the case means fails loudly instead of testing something else.
    """

    id: str
    scene: Json
    action: Json
    after: dict[str, Any]
    before: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Refusal:
    """An illegal action in a scene, refused citing ``rule`` with the state unchanged."""

    id: str
    scene: Json
    action: Json
    rule: str


def check_case(case: Case) -> None:
    """Asserts that ``case.action`` applies in its scene and leaves the dump fields ``after``."""
    state = replay(case.scene)
    seen = dump(state)
    for path, want in case.before.items():
        assert get(seen, path) == want, f"scene drifted: {path}"
    seat, action = action_from_json(case.action)
    assert seat == state.to_act, f"seat {seat} is not asked; seat {state.to_act} is"
    assert action in state.legal_actions(), f"{action} is not among the legal actions"
    state.apply(action)
    got = dump(state)
    for path, want in case.after.items():
        assert get(got, path) == want, path


def check_refusal(refusal: Refusal) -> None:
    """Asserts that the action is refused citing its rule, by the record reader and (when
    the seat is the one asked) by ``State.apply``, leaving the state unchanged."""
    with pytest.raises(RecordError) as refused:
        replay(then(refusal.scene, refusal.action))
    assert refused.value.rule == refusal.rule
    assert refusal.rule in str(refused.value)
    state = replay(refusal.scene)
    seat, action = action_from_json(refusal.action)
    if seat != state.to_act:
        return
    before = dump(state)
    with pytest.raises(IllegalActionError) as illegal:
        state.apply(action)
    assert illegal.value.rule == refusal.rule
    assert action not in state.legal_actions()
    assert dump(state) == before
