"""The ``Bot`` base class and the policy that guards every decision a bot takes.

A bot answers two kinds of decision, both with the seat's ``View`` in hand:

- ``turn(view) -> Turn``: what to play onto the oven and where to refill from;
- ``resolve(view) -> Resolve``: how to resolve one of its own orders when the
  rules give a choice (R-RES-8). The default bakes when it can.

``view.legal`` lists every legal answer in the engine's canonical order; a bot
returns one of them or builds an equal action with ``Turn.play``/``Turn.pass_turn``
or ``Resolve(...)``. ``decide`` calls the bot and, when it raises or answers
something illegal, answers with a safe legal option instead: local play and the
network loop share this policy. Each distinct fault (the same exception raised at
the same line, or the same kind of wrong answer from the same method) is logged
once, with its traceback, then only counted (see ``FaultLog``).
"""

from __future__ import annotations

import inspect
import os
import random
import threading
import traceback
from dataclasses import dataclass, field
from typing import Final

import structlog

from mammamia import RESOLVE, Action, Resolve, Turn, View

log = structlog.get_logger()

TURN_DECISION: Final = "turn"
RESOLVE_DECISION: Final = "resolve"


class Bot:
    """Subclass and implement ``turn``; override ``resolve`` and the hooks when useful.

    ``name`` is how the bot shows in logs, arena tables and on a server.
    ``rng`` is a random generator for the bot's own choices; local games and the
    arena seed it, so a game replays the same for the same seed.
    """

    name: str = "bot"
    _notes: list[str]

    @property
    def rng(self) -> random.Random:
        """Returns the bot's random generator (seeded by the game runner when it can)."""
        rng: random.Random | None = getattr(self, "_rng", None)
        if rng is None:
            rng = self._rng = random.Random()
        return rng

    @rng.setter
    def rng(self, value: random.Random) -> None:
        self._rng = value

    def turn(self, view: View) -> Turn:
        """Returns the turn to take: one of ``view.legal`` or an equal ``Turn``."""
        raise NotImplementedError(f"{type(self).__name__} must implement turn(view)")

    def resolve(self, view: View) -> Resolve:
        """Returns how to resolve ``view.deciding``, this bot's revealed order (R-RES-8).

        The default bakes with the option that spends the fewest hand cards (a pizza
        outweighs the tie-break of R-END-2) and declines when no option bakes.
        """
        return fewest_cards_bake(view)

    def note(self, text: str) -> None:
        """Leaves a private note on the answer being chosen: call it during ``turn`` or
        ``resolve``. On a server the note goes with the answer and comes back only in
        its owner's record, beside that decision (``mammamia ladder record --name N
        --key-file F``, then ``mammamia show``); no other seat or spectator sees it.
        Several calls in one decision are joined by newlines; the server keeps at most
        1024 bytes of UTF-8 (docs/bots.md, "Notes")."""
        pending: list[str] | None = getattr(self, "_notes", None)
        if pending is None:
            pending = self._notes = []
        pending.append(str(text))

    def on_game_start(self, view: View) -> None:
        """Called once before the bot's first decision of a game, with its first view."""

    def on_game_end(self, view: View) -> None:
        """Called once when the game is over, with the seat's final view."""

    def on_answered(self, seconds: float) -> None:
        """Called after each answer of the bot is sent, with the seconds from the
        decision's arrival to the answer's sending (the bot's time and the SDK's
        around it), so that a bot can keep a margin for that time. Not called while
        a call of the bot still runs past its deadline (the SDK sent the safe option
        for it). It runs on the SDK's event loop (or the local game's thread): it
        must return at once."""


def fewest_cards_bake(view: View) -> Resolve:
    """Returns the legal bake that adds the fewest hand cards, else the decline."""
    bakes = [a for a in view.legal if isinstance(a, Resolve) and a.bake]
    if not bakes:
        return Resolve.decline()
    return min(bakes, key=lambda a: sum(a.hand) if a.hand else 0)


def fallback(view: View) -> Action:
    """Returns the safe legal answer used when a bot fails: the default bake policy
    for a resolution, the first legal option for a turn (the server's own default)."""
    if view.phase == RESOLVE:
        return fewest_cards_bake(view)
    return view.legal[0]


@dataclass(frozen=True, slots=True)
class Fault:
    """One distinct fault of a bot: what went wrong the first time, and where.

    ``key`` is what makes two faults the same one: the bot's class, the kind of
    fault and the place (the line that raised, or the method that answered wrongly).
    ``where`` is that place as ``file:line``; ``trace`` the traceback of the bot's
    own frames (empty for a wrong answer).
    """

    key: str
    bot: str
    kind: str
    message: str
    where: str
    trace: str = ""
    decision: str = ""

    def describe(self) -> str:
        """Returns the fault as a few lines a person reads: what, where, the traceback."""
        text = f"bot {self.bot!r} {self.message} ({self.kind} {self.decision}) at {self.where}"
        return text + ("\n" + self.trace.rstrip() if self.trace else "")


@dataclass
class FaultLog:
    """Reports each distinct fault once (a ``bot_decision_replaced`` warning with its
    traceback, unless ``quiet``), then only counts it."""

    quiet: bool = False
    faults: dict[str, Fault] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, fault: Fault, seat: int | None = None, played: str = "") -> bool:
        """Counts ``fault``; returns whether it is new (and then logs it)."""
        with self.lock:
            new = fault.key not in self.faults
            if new:
                self.faults[fault.key] = fault
            self.counts[fault.key] = self.counts.get(fault.key, 0) + 1
        if new and not self.quiet:
            log.warning(
                "bot_decision_replaced",
                bot=fault.bot,
                decision=fault.decision,
                kind=fault.kind,
                seat=seat,
                fault=fault.message,
                where=fault.where,
                traceback=fault.trace or None,
                played=played,
                note="reported once; the same fault again is only counted",
            )
        return new


PROCESS_FAULTS: Final = FaultLog()
"""The fault log ``decide`` uses when given none (one per process)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """A bot's answer to one decision, and why it was replaced if it was."""

    action: Action
    fault: str | None = None
    report: Fault | None = None
    """The fault in full (where, traceback) when the bot raised or answered wrongly."""
    note: str = ""
    """The note the bot left while deciding (``Bot.note``), "" for none."""


def decide(bot: Bot, view: View, decision: str = "", faults: FaultLog | None = None) -> Decision:
    """Returns the bot's legal answer to ``view``, or a safe legal one with the fault.

    ``decision`` names the decision in the log line (a server's decision id, or
    a local turn number). A fault goes to ``faults`` (default: ``PROCESS_FAULTS``),
    which logs each distinct one once. Never raises for a faulty bot; raises
    ValueError only when ``view`` offers no legal option (nothing was asked).
    """
    if not view.legal:
        raise ValueError(f"decision {decision!r}: the view offers no legal option")
    kind = RESOLVE_DECISION if view.phase == RESOLVE else TURN_DECISION
    bot._notes = []  # the notes of this decision only
    try:
        action = bot.resolve(view) if kind == RESOLVE_DECISION else bot.turn(view)
    except Exception as e:
        where, trace = _raised_at(e)
        fault = Fault(
            f"{_class_name(bot)}|{kind}|raised {type(e).__name__}|{where}",
            bot.name,
            kind,
            f"raised {type(e).__name__}: {e}",
            where,
            trace,
            decision,
        )
        return _replace(view, fault, faults, _taken_note(bot))
    note = _taken_note(bot)
    if action in view.legal:
        return Decision(action, note=note)
    expected = Resolve if kind == RESOLVE_DECISION else Turn
    if not isinstance(action, expected):
        why, what = f"returned {action!r}, not a {expected.__name__}", "not an action"
    else:
        why, what = f"returned an illegal {kind}: {action}", "illegal"
    where = _method_at(bot, "resolve" if kind == RESOLVE_DECISION else "turn")
    fault = Fault(
        f"{_class_name(bot)}|{kind}|{what}|{where}", bot.name, kind, why, where, "", decision
    )
    return _replace(view, fault, faults, note)


def _replace(view: View, fault: Fault, faults: FaultLog | None, note: str = "") -> Decision:
    action = fallback(view)
    (faults if faults is not None else PROCESS_FAULTS).add(fault, view.seat, str(action))
    return Decision(action, fault.message, fault, note)


NOTE_LIMIT: Final = 1024
"""The most bytes of UTF-8 of a note the server keeps (ActRequest.note)."""


def _taken_note(bot: Bot) -> str:
    """Returns the notes the bot left in this decision, joined by newlines and cut to
    :data:`NOTE_LIMIT` bytes at a character boundary (as the server would cut it)."""
    pending: list[str] = getattr(bot, "_notes", None) or []
    bot._notes = []
    text = "\n".join(pending)
    data = text.encode("utf-8")
    return data[:NOTE_LIMIT].decode("utf-8", errors="ignore") if len(data) > NOTE_LIMIT else text


def _class_name(bot: Bot) -> str:
    cls = type(bot)
    return f"{cls.__module__}.{cls.__qualname__}"


_LIBRARY_DIRS: Final = tuple(
    os.path.dirname(os.path.abspath(path)) + os.sep
    for path in (__file__, inspect.getsourcefile(Turn) or "")
)


def _raised_at(e: BaseException) -> tuple[str, str]:
    """Returns where the bot raised ``e`` (its innermost frame outside the SDK and the
    rules package, as ``file:line``) and the traceback of the frames below ``decide``."""
    frames = traceback.extract_tb(e.__traceback__)[1:]  # drop decide's own frame
    if not frames:
        return "?", "".join(traceback.format_exception_only(type(e), e))
    own = [f for f in frames if not os.path.abspath(f.filename).startswith(_LIBRARY_DIRS)]
    place = (own or frames)[-1]
    trace = (
        "Traceback (most recent call last):\n"
        + "".join(traceback.format_list(frames))
        + "".join(traceback.format_exception_only(type(e), e))
    )
    return f"{place.filename}:{place.lineno}", trace


def _method_at(bot: Bot, method: str) -> str:
    """Returns where the bot's ``method`` is defined, as ``file:line (Class.method)``."""
    func = getattr(type(bot), method, None)
    code = getattr(func, "__code__", None)
    if code is None:
        return f"? ({type(bot).__qualname__}.{method})"
    return f"{code.co_filename}:{code.co_firstlineno} ({type(bot).__qualname__}.{method})"
