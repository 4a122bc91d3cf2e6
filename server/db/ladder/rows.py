"""What the ladder's tables hold, as the ladder reads and writes it: rows and errors."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ...quoting import quoted
from ...status import MatchStatus

#: Bot names: 1 to 32 letters, digits, '-', '_' or '.' (arena.proto, RegisterRequest).
NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,32}")

#: Bot versions: up to 32 letters, digits, '-', '_', '.' or '+' (arena.proto, EnterRequest).
VERSION_PATTERN = re.compile(r"[A-Za-z0-9._+-]{0,32}")

#: The version of an Enter that names none, and of every result stored before versions.
DEFAULT_VERSION = ""

#: The ratings scope of all matches, whatever their player count.
ALL_PLAYERS = 0


class LadderError(ValueError):
    """A ladder request that cannot be granted: a bad or taken name, a wrong key."""


class NameTakenError(LadderError):
    """The bot name is registered already."""


class LadderFullError(LadderError):
    """Registering would pass the bound on names that never entered."""


@dataclass(frozen=True, slots=True)
class SeatResult:
    """One seat's outcome: rank (1 best, ties share), pizzas delivered, where the
    seat came in round 1's playing order (1: the first player; None: not known), and
    whether the server's default policy played it to the end (``autopilot``)."""

    rank: int
    delivered: int
    position: int | None = None
    autopilot: bool = False


@dataclass(frozen=True, slots=True)
class PositionTally:
    """A bot's rated games from one seat position of one player count."""

    players: int
    position: int
    games: int
    wins: int
    rank_sum: int

    @property
    def mean_rank(self) -> float:
        """Returns the mean rank from this position (1 best)."""
        return self.rank_sum / self.games if self.games else 0.0


@dataclass(frozen=True, slots=True)
class DealSetRow:
    """A duplicate set as stored: its bots in the first match's seat order, its
    server seed, commitment, status (playing, complete, cut) and matches in order."""

    set_id: str
    names: tuple[str, ...]
    server_seed: str
    commitment: str
    status: str
    matches: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Standing:
    """One bot's line in the standings."""

    rank: int
    name: str
    rating: float
    mu: float
    sigma: float
    games: int
    wins: int
    mean_delivered: float
    suspended: str | None = None  # why the bot is suspended (None: in good standing)
    version: str = DEFAULT_VERSION  # the version the line shows
    versions: int = 1  # how many of the bot's versions are rated in the scope
    league: str = ""  # the bot's league ("" when leagues are off)


@dataclass(frozen=True, slots=True)
class Tally:
    """One bot's rated games in one scope: how many, how many won, pizzas delivered."""

    games: int
    wins: int
    delivered: int


@dataclass(frozen=True, slots=True)
class Seated:
    """A bot's seat in a running ladder match, and the host that runs the match."""

    match_id: str
    seat: int
    players: int
    token: str
    host: str
    address: str
    commitment: str = ""


@dataclass(frozen=True, slots=True)
class Formed:
    """A ladder match a scheduling pass formed: its id, names in seat order, tokens."""

    match_id: str
    names: tuple[str, ...]
    tokens: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LadderMatch:
    """A ladder match as listed: seat names in seat order, winners once finished."""

    match_id: str
    players: int
    status: MatchStatus
    created: float
    names: tuple[str, ...]
    winners: tuple[int, ...]
    commitment: str = ""
    set_id: str | None = None
    set_index: int = 0
    void_reason: str | None = None  # why a finished match was voided (None: it counts)
    voided_by: str = ""


@dataclass(frozen=True, slots=True)
class Opponent:
    """How one bot fared against one opponent in the finished matches they shared."""

    name: str
    games: int
    ahead: int  # the bot ranked better
    tied: int
    behind: int


@dataclass(frozen=True, slots=True)
class RatedSeat:
    """A seat of a rated match, in finish order: what replaying the ratings reads."""

    finish_order: int
    ended: float
    name: str
    rank: int


@dataclass(frozen=True, slots=True)
class VersionLine:
    """One version of a bot in one scope: its rating, its rated games and wins, and
    when it played its first and its last rated match (UNIX time, None: unknown)."""

    version: str
    mu: float
    sigma: float
    games: int
    wins: int
    first_played: float | None
    last_played: float | None


def player(name: str, version: str) -> str:
    """Returns the rated player that is ``version`` of the bot ``name``: the name
    alone for the default version, else ``NAME@VERSION`` (a name holds no '@')."""
    return f"{name}@{version}" if version else name


def player_of(label: str) -> tuple[str, str]:
    """Returns (name, version) of a rated player (:func:`player`)."""
    name, _, version = label.partition("@")
    return name, version


def shown_version(version: str) -> str:
    """Returns how a version is shown: ``-`` for the default (empty) version."""
    return version or "-"


def hash_key(key: str) -> str:
    """Returns the hex SHA-256 of a bot key (what the database keeps)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def check_version(version: str) -> str:
    """Returns ``version``; raises LadderError unless it is up to 32 of
    [A-Za-z0-9._+-] (empty: the default version)."""
    if not VERSION_PATTERN.fullmatch(version):
        raise LadderError(
            f"bot version {quoted(version)} must be up to 32 letters, digits, '-', '_', '.' or '+'"
        )
    return version


def check_name(name: str) -> str:
    """Returns ``name``; raises LadderError unless it is 1 to 32 of [A-Za-z0-9._-]."""
    if not NAME_PATTERN.fullmatch(name):
        raise LadderError(
            f"bot name {quoted(name)} must be 1 to 32 letters, digits, '-', '_' or '.'"
        )
    return name
