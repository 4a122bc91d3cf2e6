"""The benchmark's reference engine plays the same game as ``mammamia``.

Seeded random games are played with ``mammamia``; the reference engine replays each
from the same seed and must offer the same legal actions (compared in record form,
as sets) at every step, ask the same seat, and end with the same scores and
winners. It also replays every conformance record that plays to a state. A
reference that drifted from the rules would make the benchmark's ratio
meaningless, hence the check.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from bench.reference_engine import ReferenceGame, play_random_game
from mammamia import action_to_json, new_game
from mammamia.dump import state_dump

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path("/work/shared/conformance")  # the shared records, where this machine has them


def canon(action: dict[str, Any]) -> str:
    """Returns an action's record form without its seat, as comparable text."""
    return json.dumps({k: v for k, v in action.items() if k != "seat"}, sort_keys=True)


def engine_game(players: int, seed: int) -> tuple[Any, list[tuple[int, set[str], str]]]:
    """Returns a random ``mammamia`` game played to its end and, per decision, the seat
    asked, its legal actions and the one taken (record form)."""
    state = new_game(players, seed=seed)
    choose = random.Random(seed).choice
    steps = []
    while state.to_act is not None:
        seat = state.to_act
        legal = state.legal_actions()
        action = choose(legal)
        steps.append(
            (
                seat,
                {canon(action_to_json(seat, a)) for a in legal},
                canon(action_to_json(seat, action)),
            )
        )
        state.apply(action)
    return state, steps


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_reference_replays_random_games_to_the_same_end(players: int) -> None:
    # The reference shuffles with the standard library's random.shuffle, in the order
    # the rules deal (deck, supply, waiters, first seat, each new supply), from the
    # same seed: so the same seed must give the same game card for card, which also
    # pins the engine's own shuffling (R-SETUP-8) to the standard library's.
    for seed in range(25):
        state, steps = engine_game(players, 1000 * players + seed)
        game = ReferenceGame(players, seed=1000 * players + seed)
        for index, (seat, legal, taken) in enumerate(steps):
            assert game.to_act == seat, (seed, index)
            assert {canon(a) for a in game.legal_actions()} == legal, (seed, index)
            game.apply(json.loads(taken))
        assert game.is_over()
        assert game.scores() == state.scores(), seed
        assert game.winners() == state.winners(), seed


def test_reference_plays_its_own_shuffled_games_to_the_end() -> None:
    for players in (2, 3, 4, 5):
        assert play_random_game(players, seed=players) > 0


def test_reference_refuses_an_illegal_turn() -> None:
    game = ReferenceGame(3, seed=0)
    with pytest.raises(ValueError, match="R-TURN-1"):
        game.apply({"pass": True, "draw": "supply"})


def _expect(record: Path) -> dict[str, Any]:
    """Returns the outcome a record must produce (its NAME.expect.json)."""
    loaded: dict[str, Any] = json.loads(
        record.with_name(record.stem + ".expect.json").read_text("utf-8")
    )
    return loaded


# Records of games that play (the refused ones test the engine's validation, which
# the reference does not attempt to match message for message).
RECORDS = sorted(
    p
    for d in (ROOT / "tests" / "rules" / "records", SHARED)
    if d.is_dir()
    for p in d.glob("*.json")
    if not p.name.endswith(".expect.json") and not _expect(p).get("error")
)


@pytest.mark.parametrize("record", RECORDS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_reference_replays_the_conformance_records(record: Path) -> None:
    expect = _expect(record)
    data = json.loads(record.read_text("utf-8"))
    game = ReferenceGame(
        data["players"],
        data.get("seed", 0),
        data.get("colours"),
        data.get("first_player"),
        data.get("deal"),
        data.get("reshuffles"),
    )
    for action in data["actions"]:
        assert action["seat"] == game.to_act
        game.apply({k: v for k, v in action.items() if k != "seat"})
    # While the oven is resolved, a dump lists only its cards still face down.
    oven = game.oven[game.revealed :] if game.phase == "resolve" else game.oven
    got = {
        "round": game.round,
        "phase": game.phase,
        "to_act": game.to_act,
        "oven": oven,
        "table": game.table,
        "mamma_mia_holder": game.holder,
        "deciding": game.deciding,
        "winners": game.winners(),
    }
    for key, value in got.items():
        if key in expect:
            assert value == expect[key], key
    for player, seat in zip(game.players, expect["seats"], strict=True):
        assert player["hand"] == seat["hand"]["ingredients"]
        assert sorted(player["orders"]) == sorted(seat["hand"]["orders"])
        assert sorted(player["delivered"]) == sorted(seat["delivered"])
        assert sorted(player["waiter"]) == sorted(seat["waiter"])
    if "legal" in expect:
        seat = game.to_act
        assert {canon(a) for a in game.legal_actions()} == {
            canon(a) for a in expect["legal"] if a["seat"] == seat
        }


def test_child_states_keep_their_parents_and_siblings_intact() -> None:
    # child() shares the lists of untouched seats with its parent (copy-on-write):
    # a game played as a chain of children, each parent also branched into siblings
    # that play on to the end, must stay the reference's game, and no branch may
    # change a state it came from.
    for players in (2, 3, 4, 5):
        seed = 77 + players
        state = new_game(players, seed=seed)
        game = ReferenceGame(players, seed=seed)
        choose, wander = random.Random(seed).choice, random.Random(-seed).choice
        step = 0
        while state.to_act is not None:
            before = state_dump(state)
            legal = state.legal_actions()
            siblings = [state.child(a) for a in legal[:2]]
            if step % 12 == 0:
                for side in siblings:
                    while side.to_act is not None:
                        side = side.child(wander(side.legal_actions()))
            action = choose(legal)
            child = state.child(action)
            assert state_dump(state) == before, (players, step)
            game.apply(json.loads(canon(action_to_json(0, action))))
            state = child
            step += 1
        assert game.is_over()
        assert state.scores() == game.scores()
        assert state.winners() == game.winners()
