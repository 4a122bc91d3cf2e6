"""The built-in bots: always legal, written only against the SDK, and in their order."""

from __future__ import annotations

import ast
import itertools
import sys
from pathlib import Path

import pytest

import bots.counter
from bots.counter import CounterBot
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from client_sdk import Bot, Resolve, play_local, run_arena
from mammamia import new_game, view_of

# The package's own directory (tests/bots, on the test path, is not it).
BOTS_DIR = Path(bots.counter.__file__).parent
BUILT_IN = [RandomBot, GreedyBot, CounterBot]


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_every_built_in_bot_answers_legally_in_every_game(players: int) -> None:
    for seed in range(6):
        lineup = list(itertools.islice(itertools.cycle(BUILT_IN), seed, seed + players))
        result = play_local(lineup, seed=seed, players=players)
        assert result.replaced == (0,) * players
        assert result.record.replay().is_over


@pytest.mark.parametrize("path", sorted(p.name for p in BOTS_DIR.glob("*.py")))
def test_bots_import_only_the_sdk_and_the_rules_and_say_what_they_do(path: str) -> None:
    tree = ast.parse((BOTS_DIR / path).read_text())
    doc = ast.get_docstring(tree)
    assert doc and len(doc.splitlines()[0]) > 20
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            root = (node.module or "").split(".")[0]
        elif isinstance(node, ast.Import):
            root = node.names[0].name.split(".")[0]
        else:
            continue
        # The SDK, the rules and the standard library: no gRPC, no server.
        assert root in {"client_sdk", "mammamia", "bots"} or root in sys.stdlib_module_names, (
            f"{path} imports {root}"
        )


def test_counter_resolutions_deliver_more_than_the_default_policy() -> None:
    # Wherever the counter's resolution differs from the default (bake with the fewest
    # hand cards), resolve the rest of the oven both ways with every owner baking when
    # it can: over many games the counter's choices deliver more of its pizzas.
    mine_total = default_total = differing = 0
    for seed in range(50):
        state = new_game(3, seed)
        players = [CounterBot(), CounterBot(), CounterBot()]
        while not state.is_over:
            seat = state.to_act
            assert seat is not None
            view = view_of(state, seat)
            if state.phase != "resolve":
                state.apply(players[seat].turn(view))
                continue
            mine = players[seat].resolve(view)
            default = Bot.resolve(players[seat], view)
            if mine != default:
                differing += 1
                mine_total += _pizzas_after(state, seat, mine)
                default_total += _pizzas_after(state, seat, default)
            state.apply(mine)
    assert differing >= 5
    assert mine_total > default_total


def _pizzas_after(state: object, seat: int, choice: Resolve) -> int:
    """Returns the seat's pizzas once this oven is resolved, every owner baking when it can."""
    s = state.copy()  # type: ignore[attr-defined]
    s.apply(choice)
    round_now = s.round
    while not s.is_over and s.phase == "resolve" and s.round == round_now:
        options = s.legal_actions()
        s.apply(
            min(
                (o for o in options if o.bake), default=options[-1], key=lambda o: sum(o.hand or ())
            )
        )
    return len(s.delivered[seat])


def test_the_arena_ranks_counter_above_greedy_above_random() -> None:
    result = run_arena(["random", "greedy", "counter"], games=60, players=3, jobs=2, seed=3)
    assert [b.name for b in result.bots] == ["counter", "greedy", "random"]
    by_name = {b.name: b for b in result.bots}
    assert (
        by_name["counter"].mean_delivered
        > by_name["greedy"].mean_delivered
        > by_name["random"].mean_delivered
    )
