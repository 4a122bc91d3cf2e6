"""The competition file: a TOML file that names a competition, its players, its
phases with their start times, and how its finals are played (docs/competitions.md).

:func:`load` returns a frozen :class:`Competition` or raises
:class:`CompetitionFileError`, whose one-line message names the file and the field.
Standard library only (``tomllib``), so that ``mammamia serve --help`` stays fast.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

#: The phases, in the order they come; a competition only ever moves forward.
PHASES: tuple[str, ...] = ("registration", "ladder", "freeze", "finals", "closed")

#: What each phase allows, as the docs and the service's messages say it.
PHASE_RULES: dict[str, str] = {
    "registration": "bots register and play the ladder",
    "ladder": "registration is closed; the ladder plays the bots registered",
    "freeze": "the ladder forms no matches; the finals field is fixed",
    "finals": "only the finals' tables are played",
    "closed": "the competition is over; no match is formed",
}

MAX_NAME = 80
MAX_FIELD = 64
MAX_BUDGET = 100_000
MAX_GRACE_S = 3600.0


class CompetitionFileError(ValueError):
    """A competition file that cannot be read or says something impossible; the
    message is one line naming the file and the field."""


@dataclass(frozen=True, slots=True)
class Start:
    """When a phase begins: ``seconds`` after the competition's start, or (``absolute``)
    at that UNIX time."""

    seconds: float
    absolute: bool = False

    def at(self, started: float) -> float:
        """Returns the UNIX time the phase begins, for a competition started at ``started``."""
        return self.seconds if self.absolute else started + self.seconds


@dataclass(frozen=True, slots=True)
class Finals:
    """How the finals are played (the ``[finals]`` table)."""

    #: The top ``field`` bots of the ladder at the freeze, or these names.
    field: int | tuple[str, ...]
    #: The stopping rule orders the top ``top`` of the final table.
    top: int
    #: Every adjacent pair of the top ``top`` ordered with at least this confidence.
    confidence: float
    #: The most finals matches played.
    budget: int
    #: The sizes of the finals' tables (players per match).
    tables: tuple[int, ...]
    #: How long a finalist not connected when its table forms is waited for (seconds).
    grace: float


@dataclass(frozen=True, slots=True)
class Competition:
    """A competition file, read and checked."""

    name: str
    path: str
    #: The file's text, kept as it was read (stored, and exported with the results).
    text: str
    #: Players per ladder match (min, max).
    players: tuple[int, int]
    #: The competition's start (UNIX time), or None: the first time a server runs it.
    start: float | None
    #: Each phase's start, in phase order; ``closed`` may be None (when the finals end).
    schedule: tuple[tuple[str, Start | None], ...]
    finals: Finals
    #: The deadline of every decision in the competition's matches (ms; 0: the server's).
    decision_ms: int

    def starts(self, started: float) -> list[tuple[str, float | None]]:
        """Returns each phase with the UNIX time it begins (None: not scheduled)."""
        return [(p, None if s is None else s.at(started)) for p, s in self.schedule]

    def due(self, phase: str, started: float, now: float) -> str | None:
        """Returns the latest phase after ``phase`` whose start has come by ``now``,
        or None when none is due."""
        due = None
        order = PHASES.index(phase)
        for p, at in self.starts(started):
            if PHASES.index(p) > order and at is not None and at <= now:
                due = p
        return due


def load(path: str | Path) -> Competition:
    """Returns the competition file at ``path``, checked; raises CompetitionFileError."""
    shown = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise CompetitionFileError(f"{shown}: cannot read it: {e.strerror}") from None
    except UnicodeDecodeError:
        raise CompetitionFileError(f"{shown}: not UTF-8 text") from None
    return parse(text, shown)


def parse(text: str, path: str = "<competition>") -> Competition:
    """Returns the competition described by ``text`` (the file ``path``); raises
    CompetitionFileError naming the field that is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CompetitionFileError(f"{path}: not TOML: {e}") from None
    read = _Reader(path)
    read.known(data, "", {"name", "players", "start", "schedule", "finals", "deadlines"})
    name = read.text(data, "name")
    players = read.players(data, "players")
    start = read.instant(data, "start") if "start" in data else None
    schedule = read.table(data, "schedule")
    read.known(schedule, "schedule.", set(PHASES))
    starts: list[tuple[str, Start | None]] = []
    for phase in PHASES:
        key = f"schedule.{phase}"
        if phase not in schedule:
            if phase == "closed":
                starts.append((phase, None))
                continue
            raise CompetitionFileError(f"{path}: {key}: missing (every phase but closed needs one)")
        value = schedule[phase]
        if isinstance(value, str):
            begins = Start(read.instant(schedule, phase, key), absolute=True)
        else:
            begins = Start(read.number(schedule, phase, key, low=0.0))
        if begins.absolute and start is None:
            raise CompetitionFileError(
                f"{path}: {key}: a date needs the competition's `start` to be a date too"
            )
        starts.append((phase, begins))
    reference = start if start is not None else 0.0
    previous: tuple[str, float] | None = None
    for phase, when in starts:
        if when is None:
            continue
        at = when.at(reference)
        if previous is not None and at < previous[1]:
            raise CompetitionFileError(
                f"{path}: schedule.{phase}: begins before schedule.{previous[0]}"
            )
        previous = (phase, at)
    finals = _finals(read, read.table(data, "finals"), players)
    deadlines = read.table(data, "deadlines", required=False)
    read.known(deadlines, "deadlines.", {"decision_ms"})
    decision_ms = (
        int(read.number(deadlines, "decision_ms", "deadlines.decision_ms", low=1, high=600_000))
        if "decision_ms" in deadlines
        else 0
    )
    return Competition(name, path, text, players, start, tuple(starts), finals, decision_ms)


def _finals(read: _Reader, table: dict[str, Any], players: tuple[int, int]) -> Finals:
    read.known(table, "finals.", {"field", "top", "confidence", "budget", "tables", "grace"})
    raw = table.get("field")
    field: int | tuple[str, ...]
    if isinstance(raw, list):
        names = [n for n in raw if isinstance(n, str) and n]
        if len(names) != len(raw) or len(set(names)) != len(names):
            raise CompetitionFileError(
                f"{read.path}: finals.field: a list of distinct bot names, or a number"
            )
        field = tuple(names)
        size = len(field)
    else:
        size = int(read.number(table, "field", "finals.field", low=2, high=MAX_FIELD, whole=True))
        field = size
    if not 2 <= size <= MAX_FIELD:
        raise CompetitionFileError(f"{read.path}: finals.field: from 2 to {MAX_FIELD} finalists")
    top = int(read.number(table, "top", "finals.top", low=2, high=size, whole=True))
    confidence = (
        read.number(table, "confidence", "finals.confidence", low=0.5, high=0.9999)
        if "confidence" in table
        else 0.95
    )
    budget = int(read.number(table, "budget", "finals.budget", low=1, high=MAX_BUDGET, whole=True))
    sizes = table.get("tables", [players[0]])
    if isinstance(sizes, int) and not isinstance(sizes, bool):
        sizes = [sizes]
    if (
        not isinstance(sizes, list)
        or not sizes
        or not all(isinstance(s, int) and not isinstance(s, bool) and 2 <= s <= 5 for s in sizes)
    ):
        raise CompetitionFileError(
            f"{read.path}: finals.tables: a table size from 2 to 5, or a list of them"
        )
    if min(sizes) > size:
        raise CompetitionFileError(
            f"{read.path}: finals.tables: {min(sizes)} players a table, but the field is {size}"
        )
    grace = (
        read.number(table, "grace", "finals.grace", low=0.0, high=MAX_GRACE_S)
        if "grace" in table
        else 10.0
    )
    return Finals(field, top, confidence, budget, tuple(sorted(set(sizes))), grace)


class _Reader:
    """Reads the values of one file, each checked, raising errors that name it."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, key: str, what: str) -> CompetitionFileError:
        return CompetitionFileError(f"{self.path}: {key}: {what}")

    def known(self, table: dict[str, Any], prefix: str, keys: set[str]) -> None:
        for key in table:
            if key not in keys:
                raise self.fail(
                    f"{prefix}{key}", f"unknown field (known: {', '.join(sorted(keys))})"
                )

    def table(self, data: dict[str, Any], key: str, *, required: bool = True) -> dict[str, Any]:
        value = data.get(key)
        if value is None and not required:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, "missing, or not a table ([" + key + "])")
        return value

    def text(self, data: dict[str, Any], key: str) -> str:
        value = data.get(key)
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME:
            raise self.fail(key, f"a text of 1 to {MAX_NAME} characters")
        return value.strip()

    def number(
        self,
        data: dict[str, Any],
        key: str,
        shown: str,
        *,
        low: float,
        high: float = math.inf,
        whole: bool = False,
    ) -> float:
        value = data.get(key)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or (whole and not isinstance(value, int))
            or not low <= value <= high
        ):
            kind = "a whole number" if whole else "a number"
            upto = "" if math.isinf(high) else f" to {high:g}"
            raise self.fail(shown, f"{kind} from {low:g}{upto}")
        return float(value)

    def players(self, data: dict[str, Any], key: str) -> tuple[int, int]:
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value, value]
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            or not 2 <= value[0] <= value[1] <= 5
        ):
            raise self.fail(key, "players per match: N, or [MIN, MAX], with 2 <= MIN <= MAX <= 5")
        return value[0], value[1]

    def instant(self, data: dict[str, Any], key: str, shown: str | None = None) -> float:
        value = data.get(key)
        moment: datetime | None = None
        if isinstance(value, datetime):
            moment = value
        elif isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                moment = None
        if moment is None or moment.tzinfo is None:
            raise self.fail(
                shown or key, "an ISO-8601 date and time with its zone, e.g. 2026-06-01T12:00:00Z"
            )
        return moment.timestamp()
