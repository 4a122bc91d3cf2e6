"""One match as a state machine: seats, decisions, deadlines, and one event log.

The match knows no transport, no storage and no clock. Its caller (``server.runners``)
passes in every answer and the time, and reads back what happened: a ``Ruling``
for each answer, and the entries appended to ``log`` (``server.events``). What a
seat or a spectator may see of the log is decided in one place,
``server.visibility``.

- A match waits for its seats (``join``) until its caller starts it (``start``:
  every seat has joined, or the start timeout passed). It then asks one decision
  at a time, of the seat the rules name (``State.to_act``), and applies an accepted
  answer at once, asking the next decision in the same call.
- Each decision has a deadline; after it the seat's time bank runs. At
  ``default_at`` (the deadline plus the bank left) the caller's ``tick`` applies
  the default action (the first option of a turn, declining a resolution, R-RES-8),
  empties the bank and counts a strike; an answer accepted after the deadline is
  charged to the bank by how late it came. Three strikes in a row put the seat on
  autopilot: the default policy plays it to the end without asking.
- The record's ``meta`` says what the server decided: ``timeouts`` (``{"action",
  "seat", "decision", "reason"}``, ``action`` the 0-based index of the default
  action in ``actions``, ``reason`` ``deadline`` or ``disconnected``) and
  ``autopilot`` (``{"seat", "from_action", "reason"}``, ``from_action`` the index
  of the third strike's default action).
- A finished game's record also says who won: ``ranks`` (per seat, 1 best, equal
  scores share a rank, R-END-2) and ``scores`` (per seat, ``[pizzas delivered,
  ingredient cards in hand]``).
- When the game is over, or the match is cut off (``abort``), the match is
  ``ending``: its record (``record``) must be stored before the caller announces
  the end with ``finish``, which appends the ``Ended`` entry.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from mammamia import IllegalActionError, Resolve, State, new_game, public_events, record_of, view_of
from mammamia.actions import Action
from mammamia.fairness import Fairness, seal

from .answers import ACCEPTED, REPEATED, Refusal, Ruling, refused
from .events import Asked, Decision, Defaulted, Ended, Entry, Happened, Numbered, Started
from .quoting import quoted
from .status import MatchStatus

DEFAULT_DEADLINE_MS: Final = 5000
STRIKES_TO_AUTOPILOT: Final = 3
NAME_LIMIT: Final = 64

_DECLINE: Final = Resolve(False)


@dataclass(slots=True)
class Settings:
    """What an organiser (or the ladder) chose for a match."""

    deadline_ms: int = DEFAULT_DEADLINE_MS
    time_bank_ms: int = 0
    ladder: bool = False
    names: list[str] = field(default_factory=list)


def iso(when: float) -> str:
    """Returns UNIX time ``when`` as ISO 8601 text in UTC, with milliseconds."""
    return datetime.fromtimestamp(when, UTC).isoformat(timespec="milliseconds")


class Match:
    """A match from creation until its end is announced.

    ``game`` is the game to play (usually fresh from its ``seed``); ``played`` the
    actions that led to it from the deal, for a match that starts mid-game.

    With ``fairness`` (mammamia.fairness), the game is dealt when the match starts,
    from the committed server seed and the client seeds the seats gave at Join;
    until then ``game`` only holds the seats and colours, and no view shows a card.
    """

    def __init__(
        self,
        match_id: str,
        game: State,
        seed: int,
        settings: Settings,
        now: float,
        played: Sequence[tuple[int, Action]] = (),
        fairness: Fairness | None = None,
    ) -> None:
        n = game.players
        self.id = match_id
        self.state = game
        self.seed = seed
        self.fairness = fairness
        self.settings = settings
        self.players = n
        self.names = [
            (settings.names[i] if i < len(settings.names) else "")[:NAME_LIMIT] for i in range(n)
        ]
        self.status: MatchStatus = MatchStatus.WAITING
        self.created = now
        self.started: float | None = None
        self.joined = [False] * n
        self.actions: list[tuple[int, Action]] = list(played)
        self.log: list[Entry] = []
        self.numbered: list[Numbered] = []
        self.decision: Decision | None = None
        self.ended: Ended | None = None
        self.abort_reason: str | None = None
        self.strikes = [0] * n  # in a row
        self.strikes_total = [0] * n
        self.time_bank = [settings.time_bank_ms / 1000] * n  # seconds left
        self.autopilot: set[int] = set()
        self.timeouts: list[dict[str, Any]] = []
        self.autopilot_meta: list[dict[str, Any]] = []
        self.recovered: list[dict[str, Any]] = []  # restarts the match survived
        # The notes accepted answers carried (server.notes): by the index in
        # ``actions`` of the action answered, with its seat. Never in the log nor
        # the record: they reach only their owner (server.visibility.owned_record).
        self.notes: dict[int, tuple[int, str]] = {}
        self._asked: dict[str, Decision] = {}
        self._answers: dict[str, Action] = {}  # accepted answers, for idempotency
        self._defaults: set[str] = set()  # decided by the server
        self._events_seen = 0  # engine events already in the log
        self._decisions = 0
        self._facts: tuple[tuple[str, int, bool], ...] = ()
        self._facts_stale = True

    # -- seats -----------------------------------------------------------------------

    @property
    def deals_at_start(self) -> bool:
        """Whether the game is dealt when the match starts (from committed seeds)."""
        return self.fairness is not None

    def join(self, seat: int, name: str | None = None, client_seed: str | None = None) -> bool:
        """Returns whether the name a seat shows changed after taking the seat (again).

        A ladder match keeps the ladder's names: the name a seat asks for is ignored,
        so that a bot cannot pass itself off as another in the ladder's records. A
        ``client_seed`` counts while the match waits (the last one given), when the
        server drew the seed.
        """
        self.joined[seat] = True
        fair = self.fairness
        if (
            client_seed
            and fair is not None
            and fair.takes_client_seeds
            and self.status == MatchStatus.WAITING
        ):
            fair.client_seeds[seat] = client_seed
        if name and not self.settings.ladder and self.ended is None:
            name = name[:NAME_LIMIT]
            if name != self.names[seat]:
                self.names[seat] = name
                self._facts_stale = True
                return True
        return False

    @property
    def all_joined(self) -> bool:
        """Whether every seat has joined."""
        return all(self.joined)

    def start(self, now: float) -> None:
        """Starts a waiting match (no-op otherwise): asks its first decision."""
        if self.status != MatchStatus.WAITING:
            return
        self.status = MatchStatus.RUNNING
        self.started = now
        if self.fairness is not None:
            self._deal()
            self._append(Started(len(self.numbered), self.state.copy()))
        self._ask(now)

    def _deal(self) -> None:
        """Deals the game from the seeds as they stand (the start, or an abort before it)."""
        fair = self.fairness
        assert fair is not None
        first = None if fair.first_player_drawn else self.state.events[0][2]
        self.seed = fair.seed
        self.state = new_game(self.players, self.seed, self.state.colours, first)

    # -- asking ----------------------------------------------------------------------

    def _publish(self) -> None:
        """Appends the engine's new public events to the log, numbered."""
        state = self.state
        for event in public_events(state, self._events_seen):
            if event.kind != "game_over":  # the log ends with Ended instead
                self._append(Happened(len(self.numbered) + 1, event))
        self._events_seen = len(state.events)

    def _append(self, entry: Entry) -> None:
        self.log.append(entry)
        if isinstance(entry, Happened | Defaulted):
            self.numbered.append(entry)

    def _ask(self, now: float) -> None:
        """Asks the next decision, playing the seats on autopilot, until a seat must
        answer or the game is over."""
        state = self.state
        while not state.is_over:
            seat = state.to_act
            assert seat is not None
            if seat in self.autopilot:
                self._apply(seat, self._default())
                continue
            self._publish()
            self._decisions += 1
            decision = Decision(
                f"d{self._decisions}",
                seat,
                state.phase == "resolve",
                state.legal_actions(),
                view_of(state, seat, history=False),
                self.seat_facts(),
                now,
                now + self.settings.deadline_ms / 1000,
            )
            self._asked[decision.id] = decision
            self.decision = decision
            self._append(Asked(decision))
            return
        self.decision = None
        self._publish()
        self.status = MatchStatus.ENDING

    def _close(self) -> None:
        """Closes the open decision; drops its view, which no stream sends any more
        (a closed decision is kept only to judge late answers to it)."""
        d = self.decision
        if d is not None:
            d.view = None
            d.encoded_view = None
            self.decision = None

    def seat_facts(self) -> tuple[tuple[str, int, bool], ...]:
        """Returns each seat's (name, strikes in a row, on autopilot), in seat order
        (the same object while they stay the same: most decisions change none)."""
        facts = (
            tuple(
                (self.names[i], self.strikes[i], i in self.autopilot) for i in range(self.players)
            )
            if self._facts_stale
            else self._facts
        )
        self._facts, self._facts_stale = facts, False
        return facts

    def _default(self) -> Action:
        """Returns the default action: the first option of a turn, declining a resolution."""
        state = self.state
        return _DECLINE if state.phase == "resolve" else state.legal_actions()[0]

    def _apply(self, seat: int, action: Action) -> None:
        self.state.apply(action)
        self.actions.append((seat, action))

    # -- answers ---------------------------------------------------------------------

    def answer(
        self, seat: int, decision_id: str, option: int | None, action: Action | None, now: float
    ) -> Ruling:
        """Returns the ruling on a seat's answer; applies it, and asks the next
        decision, when accepted. Exactly one of ``option`` and ``action`` is given."""
        asked = self._asked.get(decision_id)
        if asked is None:
            return refused(
                Refusal.UNKNOWN_DECISION,
                f"no decision {quoted(decision_id)} was asked in match {self.id}",
            )
        if asked.seat != seat:
            return refused(
                Refusal.OTHER_SEAT,
                f"decision {quoted(decision_id)} was asked of seat {asked.seat}, not seat {seat}",
            )
        if option is not None:
            chosen = asked.options[option] if 0 <= option < len(asked.options) else None
        else:
            chosen = action
        if asked is not self.decision:
            return self._closed(asked, chosen)
        if chosen is None:
            return refused(
                Refusal.NO_SUCH_OPTION,
                f"option {option} does not exist: decision {quoted(decision_id)} "
                f"offers options 0..{len(asked.options) - 1}",
            )
        if chosen not in asked.options:
            return self._illegal(chosen)
        late = now - asked.deadline
        if late > 0:
            self.time_bank[seat] = max(0.0, self.time_bank[seat] - late)
        if self.strikes[seat]:
            self.strikes[seat] = 0
            self._facts_stale = True
        self._answers[decision_id] = chosen
        self._close()
        self._apply(seat, chosen)
        self._ask(now)
        return ACCEPTED

    def _closed(self, asked: Decision, chosen: Action | None) -> Ruling:
        given = self._answers.get(asked.id)
        if given is not None:
            if chosen == given:
                return REPEATED  # the same answer again: accepted, nothing applied
            return refused(
                Refusal.ALREADY_ANSWERED,
                f"decision {quoted(asked.id)} is closed: the seat answered it with {given}",
            )
        if asked.id in self._defaults:
            return refused(
                Refusal.DEFAULTED,
                f"decision {quoted(asked.id)} is closed: no answer came in time and "
                f"the server applied the default action",
            )
        return refused(
            Refusal.DEFAULTED,
            f"decision {quoted(asked.id)} is closed: the match ended before an answer",
        )

    def _illegal(self, action: Action) -> Ruling:
        try:
            self.state.copy().apply(action)
        except IllegalActionError as e:
            return refused(Refusal.ILLEGAL, f"illegal answer {action}: {e}", e.rule)
        return refused(Refusal.ILLEGAL, f"illegal answer {action}: not one of the options offered")

    # -- the clock -------------------------------------------------------------------

    def default_at(self, decision: Decision) -> float:
        """Returns when the server applies the default for ``decision``: its deadline
        plus the seat's time bank left."""
        return decision.deadline + self.time_bank[decision.seat]

    def wake_at(self) -> float | None:
        """Returns when ``tick`` next has work to do (None: no decision is open)."""
        d = self.decision
        return None if d is None else self.default_at(d)

    def due(self, now: float) -> bool:
        """Returns whether ``tick`` at ``now`` applies a default."""
        d = self.decision
        return d is not None and now >= self.default_at(d)

    def restamp(self, now: float) -> None:
        """Asks the open decision again from ``now``, with a fresh deadline (a match
        resumed after a restart), and notes the recovery in the record's meta."""
        self.recovered.append({"at": iso(now), "actions": len(self.actions)})
        d = self.decision
        if d is not None:
            d.asked = now
            d.deadline = now + self.settings.deadline_ms / 1000

    def tick(self, now: float, absent: Collection[int] = ()) -> None:
        """Applies the default of the open decision if its time has come; ``absent``
        are the seats with no stream open (for the reason the record gives)."""
        d = self.decision
        if d is None or now < self.default_at(d):
            return
        seat = d.seat
        self.time_bank[seat] = 0.0
        action = self._default()
        self.strikes[seat] += 1
        self._facts_stale = True
        self.strikes_total[seat] += 1
        reason = "disconnected" if seat in absent else "deadline"
        self.timeouts.append(
            {"action": len(self.actions), "seat": seat, "decision": d.id, "reason": reason}
        )
        autopilot = self.strikes[seat] >= STRIKES_TO_AUTOPILOT
        if autopilot:
            self.autopilot.add(seat)
            self.autopilot_meta.append(
                {
                    "seat": seat,
                    "from_action": len(self.actions),
                    "reason": f"{STRIKES_TO_AUTOPILOT} consecutive deadlines passed",
                }
            )
        self._defaults.add(d.id)
        self._close()
        self._publish()
        self._append(
            Defaulted(
                len(self.numbered) + 1,
                seat,
                d.id,
                "late" if reason == "deadline" else "disconnected",
                self.strikes[seat],
                autopilot,
                action,
            )
        )
        self._apply(seat, action)
        self._ask(now)

    # -- the end ---------------------------------------------------------------------

    def abort(self, reason: str) -> None:
        """Cuts the match off (no-op once it is ending or has ended)."""
        if self.status == MatchStatus.WAITING and self.fairness is not None:
            self._deal()  # so that the record's deal is the seeds' own
        if self.status in (MatchStatus.WAITING, MatchStatus.RUNNING):
            self.status = MatchStatus.ENDING
            self.abort_reason = reason
            self._close()

    def meta(self, now: float) -> dict[str, Any]:
        """Returns the record's ``meta`` as of ``now``."""
        meta: dict[str, Any] = {
            "match": self.id,
            "names": list(self.names),
            "created": iso(self.created),
            "started": None if self.started is None else iso(self.started),
            "ended": iso(now),
            "deadline_ms": self.settings.deadline_ms,
            "strikes": list(self.strikes_total),
            "timeouts": list(self.timeouts),
            "autopilot": list(self.autopilot_meta),
        }
        if self.settings.time_bank_ms:
            meta["time_bank_ms"] = self.settings.time_bank_ms
        if self.settings.ladder:
            meta["ladder"] = True
        if self.abort_reason is not None:
            meta["aborted"] = self.abort_reason
        elif self.state.is_over:
            # Who won, so that no one needs to replay the record to know it
            # (``mammamia verify`` checks both against the replay).
            meta["ranks"] = self.state.ranking()
            meta["scores"] = [list(score) for score in self.state.scores()]
        if self.recovered:
            meta["recovered"] = list(self.recovered)
        if self.fairness is not None:
            # The seeds are revealed once the match is over (a duplicate set's: once
            # the set is); until then, only the commitment (the seed is the whole
            # deal, and the reshuffles to come).
            meta["fairness"] = self.fairness.meta(revealed=self.revealed)
        return meta

    @property
    def revealed(self) -> bool:
        """Whether the match is over, so that its seeds may be shown."""
        return self.status not in (MatchStatus.WAITING, MatchStatus.RUNNING)

    def record(self, now: float) -> str:
        """Returns the game record of the actions taken so far (JSON text); while the
        match runs, without its seed."""
        record = record_of(self.state, self.actions, seed=self.seed, meta=self.meta(now))
        if self.fairness is None or (self.revealed and not self.fairness.sealed):
            return record.dumps()
        data = record.to_json()
        del data["seed"]
        if self.fairness.sealed and self.revealed:
            # A duplicate set's later matches deal the same cards (mammamia.fairness).
            data = seal(data)
        return json.dumps(data, separators=(",", ":"))

    def result(self, stored: bool) -> Ended:
        """Returns how an ending match ends: as the rules say, or aborted when it was
        cut off or its record could not be ``stored``."""
        state = self.state
        ranks = tuple(state.ranking())
        delivered = tuple(d for d, _ in state.scores())
        if not stored:
            return Ended(
                MatchStatus.ABORTED, (), delivered, ranks, "its record could not be stored"
            )
        if self.abort_reason is not None:
            return Ended(MatchStatus.ABORTED, (), delivered, ranks, self.abort_reason)
        return Ended(MatchStatus.FINISHED, tuple(state.winners()), delivered, ranks, None)

    def finish(self, ended: Ended) -> None:
        """Announces the end (the record is stored, or could not be): appends it to the log."""
        if self.ended is not None:
            return
        self.status = ended.status
        self.ended = ended
        self._close()
        self._append(ended)
