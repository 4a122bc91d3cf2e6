"""A match's inputs: what a match took after it was created, written ahead and replayed.

A match is a state machine (``server.match``): its state is what its inputs made of
it. Its inputs are a seat joining (:class:`Join`, with its name and client seed),
the start (:class:`Start`), an accepted answer (:class:`Answer`), a deadline's
clock tick (:class:`Tick`) and an abort (:class:`Abort`). :func:`apply` applies
one to a match: the runner in live play and :func:`replay` at a restart call the
same function, so a resumed match takes exactly the steps the live one took.

The journal (``server.db.journal``) keeps each match's setup (:func:`setup_of`)
and its inputs, as JSON (:func:`to_json`, :func:`from_json`: one object per input,
its kind under ``"k"``, the format of every journal written so far).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

from mammamia import new_game
from mammamia.actions import Action, action_from_json, action_to_json
from mammamia.fairness import DealSet, Fairness

from .answers import Ruling
from .match import Match, Settings


@dataclass(frozen=True, slots=True)
class Join:
    """A seat joined (again), with the name and client seed it gave."""

    seat: int
    name: str | None
    seed: str | None


@dataclass(frozen=True, slots=True)
class Start:
    """The match started at ``at`` (the server's clock)."""

    at: float


@dataclass(frozen=True, slots=True)
class Answer:
    """A seat answered decision ``decision`` with ``action`` at ``at``.

    In live play the answer may name an offered option by its index (``option``)
    instead of an action; the journal keeps the action it stood for. ``note`` is the
    bot's private note on the answer (``server.notes``), kept when it is accepted."""

    seat: int
    decision: str
    action: Action | None
    at: float
    option: int | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class Tick:
    """The clock reached ``at``: a deadline that passed applies its default;
    ``absent`` are the seats that had no stream open then."""

    at: float
    absent: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Abort:
    """The match was cut off, for ``reason``."""

    reason: str


Input = Join | Start | Answer | Tick | Abort


@overload
def apply(match: Match, step: Join) -> bool: ...
@overload
def apply(match: Match, step: Answer) -> Ruling: ...
@overload
def apply(match: Match, step: Start | Tick | Abort) -> None: ...
def apply(match: Match, step: Input) -> bool | Ruling | None:
    """Applies one input to ``match``. Returns, for a :class:`Join`, whether the name
    the seat shows changed; for an :class:`Answer`, its ruling (refused answers
    change nothing); else None."""
    if isinstance(step, Answer):
        applied = len(match.actions)
        ruling = match.answer(step.seat, step.decision, step.option, step.action, step.at)
        if step.note and ruling.accepted and not ruling.repeated:
            # The answer is the first action it appended (seats on autopilot may follow).
            match.notes[applied] = (step.seat, step.note)
        return ruling
    if isinstance(step, Tick):
        match.tick(step.at, step.absent)
    elif isinstance(step, Join):
        return match.join(step.seat, step.name, step.seed)
    elif isinstance(step, Start):
        match.start(step.at)
    else:
        match.abort(step.reason)
    return None


def to_json(step: Input) -> dict[str, Any]:
    """Returns the journal's JSON object of an input (an :class:`Answer` must name its
    action)."""
    if isinstance(step, Answer):
        assert step.action is not None, "the journal keeps the action an answer applied"
        answer = {
            "k": "answer",
            "seat": step.seat,
            "decision": step.decision,
            "action": action_to_json(step.seat, step.action),
            "at": step.at,
        }
        if step.note:
            answer["note"] = step.note  # only when there is one: older journals have none
        return answer
    if isinstance(step, Tick):
        return {"k": "tick", "at": step.at, "absent": list(step.absent)}
    if isinstance(step, Join):
        return {"k": "join", "seat": step.seat, "name": step.name, "seed": step.seed}
    if isinstance(step, Start):
        return {"k": "start", "at": step.at}
    return {"k": "abort", "reason": step.reason}


def from_json(data: dict[str, Any]) -> Input:
    """Returns the input a journal's JSON object holds; raises ValueError (or KeyError)
    when it holds none."""
    kind = data["k"]
    if kind == "answer":
        _, action = action_from_json(data["action"])
        return Answer(
            int(data["seat"]),
            str(data["decision"]),
            action,
            float(data["at"]),
            note=str(data.get("note", "")),
        )
    if kind == "tick":
        return Tick(float(data["at"]), tuple(int(s) for s in data["absent"]))
    if kind == "join":
        return Join(int(data["seat"]), data.get("name"), data.get("seed"))
    if kind == "start":
        return Start(float(data["at"]))
    if kind == "abort":
        return Abort(str(data["reason"]))
    raise ValueError(f"unknown journal input {kind!r}")


def token_hash(token: str) -> str:
    """Returns the hex SHA-256 of a seat token (what the journal keeps of it)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Unfinished:
    """A match the journal holds that had not ended: its setup and inputs."""

    match_id: str
    setup: dict[str, Any]
    inputs: tuple[Input, ...]


def setup_of(match: Match, token_hashes: Sequence[str], first_player: int | None) -> dict[str, Any]:
    """Returns what recreates ``match`` as it was created (JSON-ready)."""
    fair = match.fairness
    assert fair is not None, "only matches dealt from seeds are journalled"
    s = match.settings
    return {
        "players": match.players,
        "colours": list(match.state.colours),
        "first_player": first_player,
        "server_seed": fair.server_seed,
        "source": fair.source,
        "first_player_drawn": fair.first_player_drawn,
        "deadline_ms": s.deadline_ms,
        "time_bank_ms": s.time_bank_ms,
        "ladder": s.ladder,
        "names": list(s.names),
        "created": match.created,
        "tokens": list(token_hashes),
        "deal_set": None if fair.deal_set is None else fair.deal_set.meta(),
    }


def replay(unfinished: Unfinished) -> Match:
    """Returns the match its setup and inputs make; raises ValueError (or the rules'
    errors) when they do not replay."""
    s = unfinished.setup
    players = int(s["players"])
    deal_set = s.get("deal_set")
    fairness = Fairness(
        unfinished.match_id,
        s["server_seed"],
        s["source"],
        [""] * players,
        bool(s["first_player_drawn"]),
        None if deal_set is None else DealSet(deal_set["id"], deal_set["index"], deal_set["size"]),
    )
    game = new_game(players, fairness.seed, s["colours"], s["first_player"])
    settings = Settings(
        deadline_ms=s["deadline_ms"],
        time_bank_ms=s["time_bank_ms"],
        ladder=s["ladder"],
        names=list(s["names"]),
    )
    match = Match(
        unfinished.match_id, game, fairness.seed, settings, s["created"], fairness=fairness
    )
    for step in unfinished.inputs:
        if isinstance(step, Answer):
            ruling = apply(match, step)
            if not ruling.accepted:
                raise ValueError(
                    f"match {match.id}: the journalled answer to "
                    f"{step.decision} is refused on replay: {ruling.message}"
                )
        else:
            apply(match, step)
    return match
