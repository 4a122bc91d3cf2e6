"""The decisions a player takes: a turn (R-TURN-*) or a resolution choice (R-RES-8).

Actions are small immutable values. The engine hands out interned instances from
``legal_actions``; constructing an equal one by hand works the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from .cards import INGREDIENTS, KIND_INDEX, ORDERS
from .errors import RecordError

SUPPLY: Final = "supply"
WAITER: Final = "waiter"
SOURCES: Final = (SUPPLY, WAITER)

Counts = tuple[int, int, int, int, int]
"""Ingredient counts by kind, in canonical order (R-COMP-1)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """A turn: play ``count`` cards of ``ingredient`` (None: pass, R-TURN-3), maybe an
    ``order`` on top (R-TURN-2), then refill from ``draw`` (None when the hand is full).
    """

    ingredient: str | None
    count: int = 0
    order: str | None = None
    draw: str | None = None

    @classmethod
    def play(
        cls, ingredient: str, count: int, order: str | None = None, draw: str | None = None
    ) -> Turn:
        """Returns the turn that plays ``count`` ``ingredient`` (and ``order``), then draws."""
        return cls(ingredient, count, order, draw)

    @classmethod
    def pass_turn(cls, draw: str | None = None) -> Turn:
        """Returns the turn that plays nothing (R-TURN-3), then draws from ``draw``."""
        return cls(None, 0, None, draw)

    @property
    def is_pass(self) -> bool:
        """Whether this turn plays no card."""
        return self.ingredient is None

    def __str__(self) -> str:
        text = "pass" if self.ingredient is None else f"play {self.count} {self.ingredient}"
        if self.order:
            text += f" + {self.order}"
        return text + (f", draw from {self.draw}" if self.draw else "")


@dataclass(frozen=True, slots=True)
class Resolve:
    """A resolution decision (R-RES-8): bake or decline the revealed order.

    ``ingredient`` is the "?" of a Minimale or the "J" of a Monotoni where the owner
    chooses it; ``hand`` the cards added from hand as counts by kind (None: none).
    """

    bake: bool
    ingredient: str | None = None
    hand: Counts | None = None

    @classmethod
    def decline(cls) -> Resolve:
        """Returns the decision not to bake (always allowed when asked)."""
        return cls(False)

    def hand_cards(self) -> dict[str, int]:
        """Returns the cards added from hand by kind name, omitting kinds not added."""
        if self.hand is None:
            return {}
        return {INGREDIENTS[k]: n for k, n in enumerate(self.hand) if n}

    def __str__(self) -> str:
        if not self.bake:
            return "decline"
        text = "bake"
        if self.ingredient:
            text += f" with {self.ingredient}"
        if self.hand:
            text += " adding " + ", ".join(f"{n} {k}" for k, n in self.hand_cards().items())
        return text


Action = Turn | Resolve


def counts_from_map(cards: dict[str, int], what: str = "hand") -> Counts:
    """Returns counts by kind from a ``{kind: count}`` map; raises RecordError on bad input."""
    values = [0] * 5
    if not isinstance(cards, dict):
        raise RecordError(f"{what} must be an object of ingredient counts, got {cards!r}")
    for kind, count in cards.items():
        if kind not in KIND_INDEX:
            raise RecordError(f"{what}: unknown ingredient {kind!r}")
        if type(count) is not int or count < 1:
            raise RecordError(
                f"{what}: count of {kind!r} must be a positive integer, got {count!r}"
            )
        values[KIND_INDEX[kind]] = count
    a, b, c, d, e = values
    return (a, b, c, d, e)


def action_to_json(seat: int, action: Action) -> dict[str, Any]:
    """Returns the record form of an action taken by ``seat`` (docs/record.md)."""
    out: dict[str, Any] = {"seat": seat}
    if isinstance(action, Turn):
        if action.ingredient is None:
            out["pass"] = True
        else:
            out["play"] = {"ingredient": action.ingredient, "count": action.count}
            if action.order is not None:
                out["order"] = action.order
        if action.draw is not None:
            out["draw"] = action.draw
        return out
    resolve: dict[str, Any] = {"bake": action.bake}
    if action.ingredient is not None:
        resolve["ingredient"] = action.ingredient
    if action.hand is not None:
        resolve["hand"] = action.hand_cards()
    out["resolve"] = resolve
    return out


_TURN_KEYS = {"seat", "play", "pass", "order", "draw"}
_RESOLVE_KEYS = {"seat", "resolve"}


def action_from_json(data: Any) -> tuple[int, Action]:
    """Returns ``(seat, action)`` from the record form; raises RecordError naming the fault."""
    if not isinstance(data, dict):
        raise RecordError(f"an action must be an object, got {data!r}")
    seat = data.get("seat")
    if type(seat) is not int:
        raise RecordError(f"action needs an integer 'seat', got {seat!r}")
    if "resolve" in data:
        extra = set(data) - _RESOLVE_KEYS
        if extra:
            raise RecordError(f"resolve action has unexpected fields {sorted(extra)}")
        return seat, _resolve_from_json(data["resolve"])
    extra = set(data) - _TURN_KEYS
    if extra:
        raise RecordError(f"turn action has unexpected fields {sorted(extra)}")
    draw = data.get("draw")
    if draw is not None and draw not in SOURCES:
        raise RecordError(f"'draw' must be 'supply' or 'waiter', got {draw!r}")
    if "pass" in data:
        if data["pass"] is not True or "play" in data:
            raise RecordError("a pass is written {\"pass\": true} without 'play'")
        if "order" in data:
            return seat, Turn(None, 0, _order_id(data["order"]), draw)
        return seat, Turn(None, 0, None, draw)
    play = data.get("play")
    if not isinstance(play, dict) or set(play) != {"ingredient", "count"}:
        raise RecordError(f"a turn needs 'play' {{ingredient, count}} or 'pass', got {play!r}")
    kind, count = play["ingredient"], play["count"]
    if not isinstance(kind, str) or kind not in KIND_INDEX:
        raise RecordError(f"play: unknown ingredient {kind!r}")
    if type(count) is not int:
        raise RecordError(f"play: count must be an integer, got {count!r}")
    order = data.get("order")
    return seat, Turn(kind, count, None if order is None else _order_id(order), draw)


def _order_id(order: Any) -> str:
    if not isinstance(order, str) or order not in ORDERS:
        raise RecordError(f"unknown order card {order!r}")
    return str(order)


def _resolve_from_json(data: Any) -> Resolve:
    if not isinstance(data, dict) or type(data.get("bake")) is not bool:
        raise RecordError(f"'resolve' needs a boolean 'bake', got {data!r}")
    extra = set(data) - {"bake", "ingredient", "hand"}
    if extra:
        raise RecordError(f"resolve has unexpected fields {sorted(extra)}")
    if not data["bake"]:
        if len(data) > 1:
            raise RecordError("a declined resolve names nothing but 'bake': false")
        return Resolve(False)
    kind = data.get("ingredient")
    if kind is not None and (not isinstance(kind, str) or kind not in KIND_INDEX):
        raise RecordError(f"resolve: unknown ingredient {kind!r}")
    hand = None
    if "hand" in data:
        hand = counts_from_map(data["hand"], "resolve.hand")
        if not any(hand):
            raise RecordError("resolve.hand is never an empty map; leave it out")
    return Resolve(True, kind, hand)
