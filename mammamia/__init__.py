"""Mamma Mia! rules engine: cards, game state, legal actions, views and game records.

Standard library only. The contract is ``docs/rules.md``; every refusal cites its rule id.

    >>> from mammamia import new_game
    >>> game = new_game(players=3, seed=7)
    >>> action = game.legal_actions()[0]
    >>> game.apply(action)
"""

from .actions import SUPPLY, WAITER, Action, Resolve, Turn, action_from_json, action_to_json
from .cards import COLOURS, INGREDIENTS, MAMMA_MIA, ORDERS, Order
from .errors import IllegalActionError, MammaMiaError, RecordError
from .record import Record, load, loads, parse, record_of
from .state import OVER, RESOLVE, TURN, State, new_game
from .views import Event, SeatInfo, View, public_events, view_of

__all__ = [
    "COLOURS",
    "INGREDIENTS",
    "MAMMA_MIA",
    "ORDERS",
    "OVER",
    "RESOLVE",
    "SUPPLY",
    "TURN",
    "WAITER",
    "Action",
    "Event",
    "IllegalActionError",
    "MammaMiaError",
    "Order",
    "Record",
    "RecordError",
    "Resolve",
    "SeatInfo",
    "State",
    "Turn",
    "View",
    "action_from_json",
    "action_to_json",
    "load",
    "loads",
    "new_game",
    "parse",
    "public_events",
    "record_of",
    "view_of",
]
