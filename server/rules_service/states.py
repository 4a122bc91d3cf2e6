"""The states a Rules service holds, by handle, and the calls on them (no protobuf).

Handles are numbers from 1 up, never reused while the service runs, so a stale
handle is always NOT_FOUND and never names another client's state. The table is
bounded (``limit``): a call that would hold more is refused whole
(TooManyStates) before it changes anything.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from mammamia import (
    Action,
    Event,
    IllegalActionError,
    MammaMiaError,
    State,
    View,
    loads,
    new_game,
    public_events,
    view_of,
)

from .errors import BadRequest, TooManyStates, UnknownHandle
from .policies import Outcome, PolicyFactory, play_out, seat_policies

DEFAULT_LIMIT: Final = 10_000
"""States held at once by default (a mid-game state is a few kilobytes)."""

MAX_SAMPLES: Final = 256
"""The most determinized samples one call may ask for."""


@dataclass(frozen=True, slots=True)
class Applied:
    """What Apply did: the state's handle (new with ``fork``), the state, and the
    public events the action caused with the sequence of the first."""

    handle: int
    state: State
    events: tuple[Event, ...]
    first_sequence: int


class States:
    """The states of one service, at most ``limit`` at once, and the Rules calls."""

    def __init__(
        self, limit: int = DEFAULT_LIMIT, policies: Mapping[str, PolicyFactory] | None = None
    ) -> None:
        self.limit = limit
        self.policies: Mapping[str, PolicyFactory] = dict(policies or {})
        self._held: dict[int, State] = {}
        self._next = 1

    def __len__(self) -> int:
        return len(self._held)

    # -- the table --------------------------------------------------------------------

    def _room(self, wanted: int) -> None:
        """Raises TooManyStates unless ``wanted`` more states fit under the bound."""
        if len(self._held) + wanted > self.limit:
            raise TooManyStates(
                f"the service holds {len(self._held)} states of at most "
                f"{self.limit}: release some (Release)"
            )

    def _add(self, state: State) -> int:
        handle = self._next
        self._next += 1
        self._held[handle] = state
        return handle

    def get(self, handle: int) -> State:
        """Returns the state of ``handle``; raises UnknownHandle."""
        state = self._held.get(handle)
        if state is None:
            raise UnknownHandle(f"handle {handle} is not held (never given out, or released)")
        return state

    def release(self, handles: Iterable[int]) -> int:
        """Returns how many of ``handles`` were held; they are no longer."""
        return sum(self._held.pop(h, None) is not None for h in set(handles))

    # -- making states ----------------------------------------------------------------

    def new_game(
        self, players: int, seed: int, colours: Sequence[str] | None, first_player: int | None
    ) -> tuple[int, State]:
        """Returns (handle, state) of a new deal; raises BadRequest for a bad setup."""
        self._room(1)
        try:
            state = new_game(players, seed, colours, first_player)
        except IllegalActionError as e:
            raise BadRequest(str(e)) from None
        return self._add(state), state

    def from_record(self, text: str, actions: int | None) -> tuple[int, State]:
        """Returns (handle, state) of a record replayed (its first ``actions``, or all);
        raises BadRequest naming what does not parse or replay."""
        self._room(1)
        state = _replay(text, actions)
        return self._add(state), state

    def determinize(self, view: View, seed: int, count: int) -> list[tuple[int, State]]:
        """Returns (handle, state) of ``count`` samples consistent with a seat's view
        (its ``history`` the public log); raises BadRequest for a view that cannot be
        sampled from."""
        if not 1 <= count <= MAX_SAMPLES:
            raise BadRequest(f"count: 1 to {MAX_SAMPLES} samples, got {count}")
        self._room(count)
        # Imported when first used: the other calls do not depend on the sampler.
        from mammamia.determinize import Sampler

        rng = random.Random(seed)
        try:
            sampler = Sampler(view)
            samples = [sampler.sample(rng) for _ in range(count)]
        except MammaMiaError as e:
            raise BadRequest(f"cannot sample from this view: {e}") from None
        return [(self._add(s), s) for s in samples]

    def record_view(self, text: str, seat: int, actions: int | None) -> View:
        """Returns ``seat``'s view, with the public history, of a record replayed;
        raises BadRequest."""
        state = _replay(text, actions)
        if not 0 <= seat < state.players:
            raise BadRequest(f"seat: 0 to {state.players - 1}, got {seat}")
        return view_of(state, seat)

    def clone(self, handle: int) -> tuple[int, State]:
        """Returns (handle, state) of a copy of ``handle``'s state."""
        state = self.get(handle)
        self._room(1)
        copy = state.copy()
        return self._add(copy), copy

    # -- playing ----------------------------------------------------------------------

    def legal(self, handle: int) -> tuple[State, tuple[Action, ...]]:
        """Returns the state and its legal options in canonical order (none once over)."""
        state = self.get(handle)
        return state, state.legal_actions()

    def apply(self, handle: int, option: int | None, action: Action | None, fork: bool) -> Applied:
        """Returns what applying one action (an option index, or the action) did;
        raises BadRequest for an option out of range or an illegal action, naming
        the rule."""
        state = self.get(handle)
        chosen = _chosen(state, option, action)
        if fork:
            self._room(1)
            state = state.copy()
        before = len(state.events)
        try:
            state.apply(chosen)
        except IllegalActionError as e:
            raise BadRequest(str(e)) from None
        events = tuple(e for e in public_events(state, before) if e.kind != "game_over")
        if fork:
            handle = self._add(state)
        return Applied(handle, state, events, before + 1)

    def playout(
        self,
        handle: int,
        names: Sequence[str],
        seed: int,
        option: int | None,
        action: Action | None,
    ) -> Outcome:
        """Returns the end of a copy of ``handle``'s state played out by the named
        policies, after the first action when one is given; raises BadRequest."""
        state = self.get(handle)
        factories = seat_policies(names, state.players, self.policies)
        game = state.copy()
        if option is not None or action is not None:
            try:
                game.apply(_chosen(game, option, action))
            except IllegalActionError as e:
                raise BadRequest(f"first: {e}") from None
        return play_out(game, factories, seed)


def _chosen(state: State, option: int | None, action: Action | None) -> Action:
    """Returns the action an option index or an action names; raises BadRequest."""
    if state.is_over:
        raise BadRequest("the game is over: there is nothing to apply (R-END-1)")
    if action is not None:
        return action
    if option is None:
        raise BadRequest("set 'option' or 'action'")
    legal = state.legal_actions()
    if not 0 <= option < len(legal):
        raise BadRequest(f"option: {option} is not below the {len(legal)} legal options")
    return legal[option]


def _replay(text: str, actions: int | None) -> State:
    """Returns the state a record reaches after its first ``actions`` (all when None);
    raises BadRequest naming the fault."""
    try:
        record = loads(text)
        if actions is not None and actions > len(record.actions):
            raise BadRequest(f"actions: the record holds {len(record.actions)}, not {actions}")
        return record.replay(actions)
    except MammaMiaError as e:
        raise BadRequest(f"record_json: {e}") from None
