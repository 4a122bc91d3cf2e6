"""The playout policies: the built-in bots, played in-process on a rules state.

The server never imports the bots (README.md, "The house"): the policies are found
by name in the ``mammamia.policies`` entry points (pyproject.toml names
``random``, ``greedy`` and ``counter``), each a class whose instances answer a
seat's view as the SDK's ``Bot`` does: ``turn(view)``, ``resolve(view)`` and a
settable ``rng``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Final, Protocol

from mammamia import TURN, Action, State, View, view_of

from ..quoting import quoted
from .errors import BadRequest

GROUP: Final = "mammamia.policies"
DEFAULT: Final = "random"


class Policy(Protocol):
    """What a playout asks of a seat's policy (the SDK's Bot answers it)."""

    rng: random.Random

    def turn(self, view: View) -> Action:
        """Returns the turn to take (one of ``view.legal``)."""
        ...

    def resolve(self, view: View) -> Action:
        """Returns how to resolve the seat's revealed order (one of ``view.legal``)."""
        ...


PolicyFactory = Callable[[], Policy]


def installed() -> dict[str, PolicyFactory]:
    """Returns the policies of the ``mammamia.policies`` entry points, by name; one
    that does not load is left out (a playout naming it is then refused)."""
    found: dict[str, PolicyFactory] = {}
    for ep in entry_points(group=GROUP):
        try:
            found[ep.name] = ep.load()
        except Exception:  # a broken plug-in must not stop the service
            continue
    return found


@dataclass(frozen=True, slots=True)
class Outcome:
    """The end of a playout: the final state and how many decisions the policies took."""

    state: State
    decisions: int


def seat_policies(
    names: Sequence[str], players: int, available: Mapping[str, PolicyFactory]
) -> list[PolicyFactory]:
    """Returns one policy factory per seat for ``names`` (one name for all, or one per
    seat; none: the default); raises BadRequest naming an unknown name or a bad count."""
    chosen = list(names) or [DEFAULT]
    if len(chosen) == 1:
        chosen = chosen * players
    if len(chosen) != players:
        raise BadRequest(f"policies: give one name or {players} (one per seat), got {len(chosen)}")
    factories = []
    for name in chosen:
        factory = available.get(name)
        if factory is None:
            raise BadRequest(
                f"policies: unknown policy {quoted(name)} (known: {', '.join(sorted(available))})"
            )
        factories.append(factory)
    return factories


def play_out(state: State, factories: Sequence[PolicyFactory], seed: int) -> Outcome:
    """Returns the end of ``state`` played by one policy per seat (``state`` itself is
    played: pass a copy to keep it). Each seat's generator is seeded from ``seed``
    and the seat, so a playout replays exactly. A policy that answers illegally or
    raises is answered for with the first legal option of a turn, or the decline
    of a resolution (the arena's default action), so a playout always ends."""
    policies = []
    for seat, factory in enumerate(factories):
        policy = factory()
        policy.rng = random.Random(f"{seed}/{seat}")
        policies.append(policy)
    decisions = 0
    while not state.is_over:
        to_act = state.to_act
        assert to_act is not None
        view = view_of(state, to_act)
        policy = policies[to_act]
        decisions += 1
        try:
            action = policy.turn(view) if state.phase == TURN else policy.resolve(view)
            state.apply(action)
        except Exception:  # see the docstring
            legal = state.legal_actions()
            state.apply(legal[0] if state.phase == TURN else legal[-1])
    return Outcome(state, decisions)
