"""A running match as the page follows it: the spectator's view, and nothing else.

Every message is built from what ``server.visibility`` gives a spectator (viewer
None): ``visibility.snapshot`` for the view and the public entries after the
page's last one, ``visibility.final`` for the end. The match's own state is never
read here, so the page shows exactly what Spectate.Watch shows (R-VIEW-4).

A page follows the match through the loop every stream uses (``server.streams``),
woken as a Watch stream is, but sends at most one message per ``MIN_INTERVAL``
seconds: a page needs no more, and a fast match would otherwise cost a message per
event to every open page.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Final

from mammamia import Event, View

from .. import visibility
from ..events import Defaulted, Numbered
from ..runner import Runner
from ..streams import Batch, Follower

MIN_INTERVAL: Final = 0.25
"""Seconds between two messages of one stream, at least."""

HISTORY_LIMIT: Final = 400
"""Public entries sent in one message at most (the newest): the page shows the
latest turns; the replay has them all once the match ends."""


def event_json(event: Event) -> dict[str, Any]:
    """Returns a public game event (R-VIEW-1) as JSON: its kind and set fields."""
    out: dict[str, Any] = {"kind": event.kind}
    for key in ("seat", "ingredient", "order", "draw"):
        value = getattr(event, key)
        if value is not None:
            out[key] = value
    for key in ("round", "count", "drawn"):
        if getattr(event, key):
            out[key] = getattr(event, key)
    for key in ("mamma_mia", "stalemate", "auto", "declined"):
        if getattr(event, key):
            out[key] = True
    if event.hand is not None:
        out["hand"] = list(event.hand)
    return out


def entry_json(entry: Numbered) -> dict[str, Any]:
    """Returns a numbered log entry (a game event, or a default the server applied)."""
    if isinstance(entry, Defaulted):
        return {
            "sequence": entry.sequence,
            "kind": "defaulted",
            "seat": entry.seat,
            "reason": entry.reason,
            "strikes": entry.strikes,
            "autopilot": entry.autopilot,
        }
    return {"sequence": entry.sequence, **event_json(entry.event)}


def view_json(view: View, facts: tuple[tuple[str, int, bool], ...]) -> dict[str, Any]:
    """Returns a spectator's view as JSON; ``facts`` are the seats' public (name,
    strikes, autopilot). Hands, waiters and legal actions are a seat's own and
    absent from a spectator's view; they are not written either."""
    return {
        "players": view.players,
        "colours": list(view.colours),
        "round": view.round,
        "phase": view.phase,
        "to_act": view.to_act,
        "deciding": view.deciding,
        "supply": view.supply_size,
        "oven": list(view.oven),
        "revealed": view.revealed,
        "table": list(view.table),
        "used": len(view.used),
        "holder": view.mamma_mia_holder,
        "winners": list(view.winners),
        "seats": [
            {
                "name": facts[s.seat][0] if s.seat < len(facts) else "",
                "colour": s.colour,
                "hand_size": s.hand_size,
                "orders_in_hand": s.orders_in_hand,
                "waiter": s.waiter_size,
                "delivered": list(s.delivered),
                "strikes": facts[s.seat][1] if s.seat < len(facts) else 0,
            }
            for s in view.seats
        ],
    }


def message(runner: Runner, after: int) -> tuple[dict[str, Any], int]:
    """Returns the page's message for the match now, with the public entries after
    sequence ``after``, and the sequence it reaches."""
    state = runner.match
    snap = visibility.snapshot(state, None, after)
    out: dict[str, Any] = {
        "match": runner.id,
        "status": snap.status,
        "sequence": snap.sequence,
        "view": view_json(snap.view, state.seat_facts()),
        "events": [entry_json(e) for e in snap.history[-HISTORY_LIMIT:]],
        "final": None,
    }
    if state.ended is not None:
        final = visibility.final(state, state.ended, None)
        out["status"] = final.ended.status
        out["view"] = view_json(final.view, state.seat_facts())
        out["final"] = {
            "status": final.ended.status,
            "winners": list(final.ended.winners),
            "delivered": list(final.ended.delivered),
            "ranks": list(final.ended.ranks),
            "reason": final.ended.reason,
        }
    return out, snap.sequence


async def follow(runner: Runner, after: int = 0) -> AsyncIterator[dict[str, Any]]:
    """Yields a message now and then each time the match moves on (at most one per
    ``MIN_INTERVAL``), until the one with its end."""

    def render(batch: Batch, now: float) -> dict[str, Any]:
        # The message covers the match so far, whatever the batch that woke it.
        nonlocal after
        out, after = message(runner, after)
        return out

    async for out in runner.streams.stream(Follower(None), after, render, MIN_INTERVAL):
        yield out
