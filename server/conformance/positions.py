"""Where the decision scenarios start: positions found with the rules engine at run time.

Each kind of resolution decision is found by playing seeded random games (2 players,
seed 0, 1, 2, ...) until the rules ask a seat that decision; the game is copied there,
with the actions that led to it from the deal, for ``Runners.create_match(game=...,
played=...)``. The search is bounded (``MAX_SEEDS`` games) and deterministic: the same
engine finds the same positions on every machine. Nothing is cached on disk.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from mammamia import ORDERS, Resolve, State, new_game
from mammamia.actions import Action

PLAYERS: Final = 2
MAX_SEEDS: Final = 2000


@dataclass(frozen=True, slots=True)
class Position:
    """A game at a decision of ``seat``: its ``seed``, the ``game`` there and the
    ``played`` actions from the deal (seat, action)."""

    seed: int
    seat: int
    game: State
    played: tuple[tuple[int, Action], ...]
    order: str

    def describe(self) -> str:
        """Returns a short text naming the position."""
        return (
            f"seed {self.seed}, action {len(self.played)}, seat {self.seat} resolves {self.order}"
        )


def _bakes(state: State) -> list[Resolve]:
    return [a for a in state.legal_actions() if isinstance(a, Resolve) and a.bake]


def _minimale(state: State) -> bool:
    # A "?" to choose among ties: several bakes, each naming its kind.
    return (
        ORDERS[_deciding(state)].kind == "minimale"
        and len({b.ingredient for b in _bakes(state) if b.ingredient}) > 1
    )


def _monotoni(state: State) -> bool:
    # A "J" to choose: several kinds the oven (and the hand) can bake it with.
    return (
        ORDERS[_deciding(state)].kind == "monotoni"
        and len({b.ingredient for b in _bakes(state) if b.ingredient}) > 1
    )


def _add_from_hand(state: State) -> bool:
    return ORDERS[_deciding(state)].kind == "standard" and any(
        b.hand and any(b.hand) for b in _bakes(state)
    )


def _bombastica(state: State) -> bool:
    return ORDERS[_deciding(state)].kind == "bombastica" and bool(_bakes(state))


def _decline(state: State) -> bool:
    return any(isinstance(a, Resolve) and not a.bake for a in state.legal_actions())


def _deciding(state: State) -> str:
    assert state.deciding is not None
    return state.deciding


KINDS: Final[dict[str, Callable[[State], bool]]] = {
    "minimale": _minimale,
    "monotoni": _monotoni,
    "add-from-hand": _add_from_hand,
    "bombastica": _bombastica,
    "decline": _decline,
}
"""Each decision scenario's test of a resolution decision."""


class NotFound(RuntimeError):
    """No game of the bounded search reached the decision."""


def find(kind: str, *, max_seeds: int = MAX_SEEDS) -> Position:
    """Returns the first position of a seeded random game where a seat is asked a
    resolution decision of ``kind`` (a key of ``KINDS``); raises NotFound."""
    wanted = KINDS[kind]
    for seed in range(max_seeds):
        state = new_game(PLAYERS, seed)
        rng = random.Random(seed)
        played: list[tuple[int, Action]] = []
        while not state.is_over:
            seat = state.to_act
            assert seat is not None
            if state.phase == "resolve" and wanted(state):
                return Position(seed, seat, state.copy(), tuple(played), _deciding(state))
            action = rng.choice(state.legal_actions())
            played.append((seat, action))
            state.apply(action)
    raise NotFound(f"no {kind} decision in {max_seeds} seeded random games")
