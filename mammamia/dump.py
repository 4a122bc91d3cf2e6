"""The state dump printed by ``mammamia state`` (docs/record.md, "The state dump")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .actions import action_to_json
from .cards import INGREDIENTS
from .state import State


def counts_map(counts: Sequence[int]) -> dict[str, int]:
    """Returns an ingredient map listing all five kinds in canonical order."""
    return {name: counts[k] for k, name in enumerate(INGREDIENTS)}


def state_dump(state: State) -> dict[str, Any]:
    """Returns the full state as the JSON-ready dump of docs/record.md (hidden cards included)."""
    seat = state.to_act
    return {
        "round": state.round,
        "phase": state.phase,
        "to_act": seat,
        "supply": state.supply[::-1],
        "oven": state.oven[state.revealed :] if state.phase == "resolve" else list(state.oven),
        "table": counts_map(state.table),
        "used": len(state.used),
        "mamma_mia_holder": state.holder,
        "deciding": state.deciding,
        "seats": [
            {
                "colour": state.colours[i],
                "hand": {
                    "ingredients": counts_map(state.hand_ings[i]),
                    "orders": list(state.hand_orders[i]),
                },
                "waiter": list(state.waiters[i]),
                "delivered": list(state.delivered[i]),
            }
            for i in range(state.players)
        ],
        "legal": [action_to_json(seat, a) for a in state.legal_actions()]
        if seat is not None
        else [],
        "winners": state.winners(),
    }
