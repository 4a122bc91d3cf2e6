"""Game records (docs/record.md): read with validation, write, and replay.

A record fixes a game's start (players, colours, first player, seed, an optional
stacked deal and reshuffles) and lists every decision in order.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .actions import Action, action_from_json, action_to_json
from .cards import (
    COLOURS,
    DEALT_INGREDIENTS,
    MAMMA_MIA,
    MAX_PLAYERS,
    MIN_PLAYERS,
    ORDERS,
    ORDERS_BY_COLOUR,
    ingredient_deck,
)
from .errors import IllegalActionError, RecordError
from .state import State

FORMAT: Final = "mammamia-record/1"
_KEYS: Final = {
    "format",
    "players",
    "colours",
    "first_player",
    "seed",
    "deal",
    "reshuffles",
    "actions",
    "meta",
}


@dataclass
class Record:
    """A parsed game record. ``actions`` holds ``(seat, action)`` pairs in order."""

    players: int
    colours: tuple[str, ...]
    seed: int = 0
    first_player: int | None = None
    deal: dict[str, Any] | None = None
    reshuffles: list[list[str]] | None = None
    actions: list[tuple[int, Action]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def start(self) -> State:
        """Returns the state before the first action."""
        return State.new(
            self.players, self.seed, self.colours, self.first_player, self.deal, self.reshuffles
        )

    def states(self) -> Iterator[State]:
        """Yields the start state and then the state after each action (one object,
        changed in place: copy what you keep); raises RecordError for an illegal action."""
        state = self.start()
        yield state
        for index, (seat, action) in enumerate(self.actions):
            _apply(state, index, seat, action)
            yield state

    def replay(self, upto: int | None = None) -> State:
        """Returns the state after the first ``upto`` actions (all by default);
        raises RecordError naming the action index and the rule it breaks."""
        state = self.start()
        for index, (seat, action) in enumerate(self.actions[:upto]):
            _apply(state, index, seat, action)
        return state

    def to_json(self) -> dict[str, Any]:
        """Returns the record as a JSON-ready dict (docs/record.md)."""
        out: dict[str, Any] = {
            "format": FORMAT,
            "players": self.players,
            "colours": list(self.colours),
        }
        if self.first_player is not None:
            out["first_player"] = self.first_player
        out["seed"] = self.seed
        if self.deal is not None:
            out["deal"] = self.deal
        if self.reshuffles:
            out["reshuffles"] = self.reshuffles
        out["actions"] = [action_to_json(seat, a) for seat, a in self.actions]
        if self.meta:
            out["meta"] = self.meta
        return out

    def dumps(self) -> str:
        """Returns the record as compact JSON text."""
        return json.dumps(self.to_json(), separators=(",", ":"))


def _apply(state: State, index: int, seat: int, action: Action) -> None:
    if state.to_act is None:
        raise RecordError(f"action {index} (seat {seat}): the game is over (R-END-1)", "R-END-1")
    if seat != state.to_act:
        rule = "R-TURN-1" if state.phase == "turn" else "R-RES-8"
        raise RecordError(
            f"action {index} (seat {seat}): seat {state.to_act} is to act, "
            f"not seat {seat} ({rule})",
            rule,
        )
    try:
        state.apply(action)
    except IllegalActionError as e:
        raise RecordError(f"action {index} (seat {seat}): {e}", e.rule) from None
    except RecordError as e:
        raise RecordError(f"action {index} (seat {seat}): {e}", e.rule) from None


def record_of(
    state: State,
    actions: Sequence[tuple[int, Action]],
    seed: int = 0,
    meta: dict[str, Any] | None = None,
) -> Record:
    """Returns the record of a game played from ``state``'s start through ``actions``.

    ``state`` is the game after ``actions`` (or its start, before any of them). The
    deal and the reshuffles the game saw are written out, so the record replays
    without relying on the shuffles of this implementation.
    """
    if actions and len(state.events) == 1:
        # A start state has seen no reshuffle yet: play the game to learn them.
        state = state.copy()
        for index, (seat, action) in enumerate(actions):
            _apply(state, index, seat, action)
    return Record(
        players=state.players,
        colours=state.colours,
        seed=seed,
        first_player=state.events[0][2],
        deal=state.deal,
        reshuffles=[list(r) for r in state.reshuffles] or None,
        actions=list(actions),
        meta=dict(meta or {}),
    )


def loads(text: str) -> Record:
    """Returns the record parsed from JSON text; raises RecordError naming the fault."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise RecordError(f"not valid JSON: {e}") from None
    except RecursionError:
        raise RecordError("not valid JSON: nested too deeply") from None
    return parse(data)


def load(path: str) -> Record:
    """Returns the record read from a file; raises RecordError, naming the file, for a
    record that cannot be read or parsed (also for I/O errors)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise RecordError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise RecordError(
            f"{path}: cannot read: not UTF-8 text ({e.reason} at byte {e.start})"
        ) from None
    try:
        return loads(text)
    except RecordError as e:
        raise RecordError(f"{path}: {e}", e.rule) from None


def parse(data: Any) -> Record:
    """Returns the record from decoded JSON; raises RecordError naming what is wrong."""
    if not isinstance(data, dict):
        raise RecordError("a record must be a JSON object")
    if data.get("format") != FORMAT:
        raise RecordError(f"'format' must be {FORMAT!r}, got {data.get('format')!r}")
    extra = set(data) - _KEYS
    if extra:
        raise RecordError(f"unexpected fields {sorted(extra)}")
    players = data.get("players")
    if type(players) is not int or not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise RecordError(f"'players' must be 2 to 5, got {players!r} (R-SETUP-1)", "R-SETUP-1")
    colours = data.get("colours", list(COLOURS[:players]))
    if (
        not isinstance(colours, list)
        or len(colours) != players
        or len(set(map(str, colours))) != players
        or any(c not in COLOURS for c in colours)
    ):
        raise RecordError(
            f"'colours' must be {players} distinct colours of {list(COLOURS)}, "
            f"got {colours!r} (R-SETUP-1)",
            "R-SETUP-1",
        )
    first = data.get("first_player")
    if first is not None and (type(first) is not int or not 0 <= first < players):
        raise RecordError(f"'first_player' must be a seat 0..{players - 1}, got {first!r}")
    seed = data.get("seed", 0)
    if type(seed) is not int:
        raise RecordError(f"'seed' must be an integer, got {seed!r}")
    deal = data.get("deal")
    if deal is not None:
        deal = _parse_deal(deal, players, colours)
    reshuffles = data.get("reshuffles")
    if reshuffles is not None:
        if (
            not isinstance(reshuffles, list)
            or len(reshuffles) > 2
            or not all(
                isinstance(r, list) and all(isinstance(c, str) for c in r) for r in reshuffles
            )
        ):
            raise RecordError("'reshuffles' must be a list of at most 2 lists of card ids")
        for i, r in enumerate(reshuffles):
            _check_cards(r, f"reshuffles[{i}]")
            if r.count(MAMMA_MIA) != 1:
                raise RecordError(
                    f"reshuffles[{i}] must hold the mamma-mia card once (R-NEXT-2)", "R-NEXT-2"
                )
    actions = data.get("actions", [])
    if not isinstance(actions, list):
        raise RecordError("'actions' must be a list")
    parsed = []
    for i, a in enumerate(actions):
        try:
            parsed.append(action_from_json(a))
        except RecordError as e:
            raise RecordError(f"action {i}: {e}") from None
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise RecordError("'meta' must be an object")
    return Record(
        players=players,
        colours=tuple(colours),
        seed=seed,
        first_player=first,
        deal=deal,
        reshuffles=reshuffles,
        actions=parsed,
        meta=meta,
    )


def _check_cards(cards: list[Any], what: str) -> None:
    for c in cards:
        if not isinstance(c, str) or (
            c != MAMMA_MIA and c not in ORDERS and c not in _INGREDIENT_SET
        ):
            raise RecordError(f"{what}: unknown card id {c!r}")
        if c in ORDERS:
            raise RecordError(f"{what}: order card {c!r} cannot be here")


_INGREDIENT_SET: Final = frozenset(ingredient_deck(5))


def _parse_deal(deal: Any, players: int, colours: list[str]) -> dict[str, Any]:
    if not isinstance(deal, dict) or set(deal) != {"hands", "supply", "waiters"}:
        raise RecordError("'deal' must be an object with 'hands', 'supply' and 'waiters'")
    hands, supply, waiters = deal["hands"], deal["supply"], deal["waiters"]
    if not isinstance(hands, list) or len(hands) != players:
        raise RecordError(f"deal.hands must list {players} hands")
    for i, h in enumerate(hands):
        if not isinstance(h, list) or len(h) != DEALT_INGREDIENTS:
            raise RecordError(
                f"deal.hands[{i}] must hold {DEALT_INGREDIENTS} ingredient cards (R-SETUP-3)",
                "R-SETUP-3",
            )
        _check_cards(h, f"deal.hands[{i}]")
        if MAMMA_MIA in h:
            raise RecordError(
                f"deal.hands[{i}]: the mamma-mia card is not dealt (R-SETUP-4)", "R-SETUP-4"
            )
    if not isinstance(supply, list):
        raise RecordError("deal.supply must be a list of card ids")
    _check_cards(supply, "deal.supply")
    if supply.count(MAMMA_MIA) != 1:
        raise RecordError(
            "deal.supply must hold the mamma-mia card exactly once (R-SETUP-4)", "R-SETUP-4"
        )
    dealt = Counter(c for h in hands for c in h) + Counter(c for c in supply if c != MAMMA_MIA)
    want = Counter(ingredient_deck(players))
    if dealt != want:
        diff = [
            f"{k}: {dealt[k]} instead of {want[k]}" for k in sorted(want) if dealt[k] != want[k]
        ]
        raise RecordError(
            f"deal: hands and supply must hold the {sum(want.values())} ingredient "
            f"cards of {players} players ({'; '.join(diff)}) (R-SETUP-2)",
            "R-SETUP-2",
        )
    if not isinstance(waiters, list) or len(waiters) != players:
        raise RecordError(f"deal.waiters must list {players} waiters")
    for i, (w, colour) in enumerate(zip(waiters, colours, strict=True)):
        expected = sorted(o.id for o in ORDERS_BY_COLOUR[colour])
        if not isinstance(w, list) or sorted(map(str, w)) != expected:
            raise RecordError(
                f"deal.waiters[{i}] must be exactly the 8 {colour} orders (R-SETUP-5), got {w!r}",
                "R-SETUP-5",
            )
    return {"hands": hands, "supply": supply, "waiters": waiters}


def result_faults(record: Record) -> list[str]:
    """Returns what does not match between the result ``record``'s meta states
    (``ranks``, ``scores``, when present) and the result its replay reaches (empty
    when all does, or when the meta states none). Raises RecordError when the record
    does not replay."""
    stated = {k: record.meta[k] for k in ("ranks", "scores") if k in record.meta}
    if not stated:
        return []
    state = record.replay()
    if not state.is_over:
        return [f"meta states {' and '.join(stated)}, but the game is not over"]
    replayed = {"ranks": state.ranking(), "scores": [list(s) for s in state.scores()]}
    return [
        f"meta.{key} {value} are not the {key} the replay gives ({replayed[key]}, R-END-2)"
        for key, value in stated.items()
        if value != replayed[key]
    ]
