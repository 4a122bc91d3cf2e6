"""Scrimmages: unrated matches a bot's owner asks for against named opponents.

``Ladder.Challenge`` (``mammamia ladder challenge``): one version of a bot (the one
entered now) plays a count of matches against opponents the owner names, every one
of them entered in the ladder. The matches go through the ladder's assignment path:
each is created as a ladder match and its seats are told on the bots' own Enter
streams (``Lobby.seat``), so a bot needs nothing new to play one. While the
scrimmage lasts its bots are out of the ladder's scheduling (``Scheduler.claim``:
a bot in a ladder match is claimed when that match ends), and its matches are
played one after another. None is rated: when a match ends its result is kept with
the scrimmage and its ladder row removed (``server.db.ladder.scrimmages``), so the
standings never move; its record is kept and served as a ladder record is.

- **Seats** (:func:`seatings`): each match seats the challenger and ``players - 1``
  opponents, taken in turn from the list named, and the challenger's seat turns
  with the matches; with duplicate deals, each deal is played once for every
  rotation of its seats (one duplicate set per deal, its records sealed until the
  deal's last match ends, as the ladder's sets are).
- **The table** (:func:`table`): one line per player, the challenger first: games,
  wins (a shared first place counts), the win rate with its 95% interval (Wilson's),
  mean rank and mean pizzas.
- **The sequential test** (``sprt``): two players, one opponent, deal pairs with the
  seats swapped, and the test of ``mammamia arena --sprt`` (``mammamia.sprt``, the
  challenger as B): after each pair the log-likelihood ratio is checked against its
  bounds, and the scrimmage stops at the decision (or at its most matches, undecided).
- **Limits**: one scrimmage of a name at a time, and ``Bounds.scrimmages_per_hour``
  an hour (``mammamia serve --ladder-quota-scrimmages``); at most
  :data:`MAX_MATCHES` matches each.

A scrimmage ends early when one of its bots leaves the ladder or is suspended, a
match is aborted, the server stops, or the caller closes its stream (after the match
under way, which ends and is kept). On a ladder of many hosts (a shared PostgreSQL
lobby) scrimmages are refused: the bots are scheduled in the database there.
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
from collections.abc import AsyncGenerator, Iterator, Sequence
from dataclasses import asdict, dataclass, field

import structlog

from mammamia.fairness import DealSet, new_server_seed
from mammamia.sprt import PAIR_SCORES, Decision, Sprt, pair_halves
from server.db.connection import storable
from server.db.ladder.rows import LadderError, player, player_of
from server.db.ladder.scrimmages import PLAYING, ScrimmageMatch, ScrimmageRow, StoredScrimmage
from server.quoting import quoted
from server.status import MatchStatus

from .discipline import SuspendedError, refusal
from .ladder import Ladder, UnknownBotError
from .lobby import LocalLobby, StartedMatch

log = structlog.get_logger()

#: Matches a scrimmage plays, by default and at most.
DEFAULT_MATCHES = 20
MAX_MATCHES = 200

#: Players per match, by default.
DEFAULT_PLAYERS = 2

#: Scrimmages a page of Ladder.Scrimmages lists, by default and at most (each with
#: up to MAX_MATCHES matches: a page stays well under a message's limit).
DEFAULT_LISTED = 10
MAX_LISTED = 20

#: The z of a 95% interval.
Z95 = 1.959963984540054


class ScrimmageError(LadderError):
    """A scrimmage asked for with bad counts or names (the message says which)."""


class NotReadyError(LadderError):
    """A scrimmage that cannot start now: bots not entered or suspended, a version
    not entered, a paused ladder, a ladder of many hosts (the message says which)."""


@dataclass(frozen=True, slots=True)
class Challenge:
    """A scrimmage as asked for: the challenger's name and version ("": the one
    entered now), its opponents, players per match, matches, duplicate deals, and
    the sequential test (None: a fixed count)."""

    name: str
    version: str
    opponents: tuple[str, ...]
    players: int = DEFAULT_PLAYERS
    matches: int = DEFAULT_MATCHES
    duplicate: bool = False
    sprt: Sprt | None = None


def checked(challenge: Challenge) -> Challenge:
    """Returns ``challenge`` with its defaults (0 players or matches) filled in; raises
    ScrimmageError for a bad count or an opponent named twice, or the bot itself."""
    players = challenge.players or DEFAULT_PLAYERS
    matches = challenge.matches or DEFAULT_MATCHES
    opponents = challenge.opponents
    if not opponents:
        raise ScrimmageError("a scrimmage needs at least one opponent")
    if len(set(opponents)) != len(opponents):
        raise ScrimmageError("an opponent is named twice")
    if challenge.name in opponents:
        raise ScrimmageError(f"bot {quoted(challenge.name)} cannot be its own opponent")
    if not 2 <= players <= 5:
        raise ScrimmageError(f"players {players}: 2 to 5 (R-SETUP-1)")
    if players - 1 > len(opponents):
        raise ScrimmageError(
            f"players {players}: more seats than the bot and its {len(opponents)} "
            f"opponent{'s' if len(opponents) > 1 else ''} named"
        )
    if not 1 <= matches <= MAX_MATCHES:
        raise ScrimmageError(f"matches {matches}: 1 to {MAX_MATCHES}")
    if challenge.sprt is not None:
        if players != 2 or len(opponents) != 1:
            raise ScrimmageError("the sequential test needs two players: one opponent")
        if matches < 2 or matches % 2:
            raise ScrimmageError(
                f"matches {matches}: the sequential test plays deal pairs, an even count"
            )
    elif challenge.duplicate and matches % players:
        raise ScrimmageError(
            f"matches {matches}: duplicate deals play each deal once per rotation of "
            f"the seats, a multiple of {players}"
        )
    return Challenge(
        challenge.name,
        challenge.version,
        opponents,
        players,
        matches,
        challenge.duplicate or challenge.sprt is not None,
        challenge.sprt,
    )


def seatings(challenge: Challenge) -> Iterator[tuple[tuple[str, ...], int, int]]:
    """Returns the matches of a checked challenge, in order: each as (names in seat
    order, its deal, its rotation of the deal's seats). Without duplicate deals every
    match is a deal of its own (rotation 0)."""
    p = challenge.players
    opponents = challenge.opponents
    taken = p - 1
    for index in range(challenge.matches):
        deal, rotation = (index // p, index % p) if challenge.duplicate else (index, 0)
        start = deal * taken
        group = [opponents[(start + j) % len(opponents)] for j in range(taken)]
        table = (challenge.name, *group)
        # Without duplicate deals the challenger's seat turns with the matches.
        turn = rotation if challenge.duplicate else index % p
        yield tuple(table[(seat - turn) % p] for seat in range(p)), deal, rotation


@dataclass(frozen=True, slots=True)
class Line:
    """One player's line in a scrimmage's table (see :func:`table`)."""

    name: str
    version: str
    games: int
    wins: int
    win_rate: float
    low: float
    high: float
    mean_rank: float
    mean_delivered: float


def wilson(wins: int, games: int, z: float = Z95) -> tuple[float, float]:
    """Returns the Wilson interval of a share of ``wins`` in ``games`` ((0, 1) for none)."""
    if games == 0:
        return 0.0, 1.0
    share = wins / games
    centre = (share + z * z / (2 * games)) / (1 + z * z / games)
    spread = z * math.sqrt(share * (1 - share) / games + z * z / (4 * games * games))
    spread /= 1 + z * z / games
    return max(0.0, centre - spread), min(1.0, centre + spread)


def table(order: Sequence[str], matches: Sequence[ScrimmageMatch]) -> list[Line]:
    """Returns the table of the finished ``matches``: a line per player (a version of
    a bot), the bots in ``order`` (the challenger, then its opponents), each bot's
    versions in the order they first played."""
    seen: dict[str, list[tuple[int, int]]] = {}
    for match in matches:
        if match.status != MatchStatus.FINISHED:
            continue
        for label, rank, delivered in zip(match.names, match.ranks, match.delivered, strict=True):
            seen.setdefault(label, []).append((rank, delivered))
    place = {name: i for i, name in enumerate(order)}
    labels = sorted(seen, key=lambda label: place.get(player_of(label)[0], len(place)))
    lines = []
    for label in labels:
        games = seen[label]
        wins = sum(1 for rank, _ in games if rank == 1)
        low, high = wilson(wins, len(games))
        name, version = player_of(label)
        lines.append(
            Line(
                name,
                version,
                len(games),
                wins,
                wins / len(games),
                low,
                high,
                sum(rank for rank, _ in games) / len(games),
                sum(d for _, d in games) / len(games),
            )
        )
    return lines


@dataclass(frozen=True, slots=True)
class TestState:
    """A scrimmage's sequential test so far."""

    sprt: Sprt
    llr: float
    decision: Decision | None
    pentanomial: tuple[int, ...]

    @property
    def pairs(self) -> int:
        """Returns the deal pairs weighed."""
        return sum(self.pentanomial)


def weigh(test: Sprt, name: str, matches: Sequence[ScrimmageMatch]) -> TestState:
    """Returns the test after the complete deal pairs of ``matches`` (two finished
    matches of one deal, in order), the challenger ``name`` as B."""
    counts = [0] * PAIR_SCORES
    finished = [m for m in matches if m.status == MatchStatus.FINISHED]
    by_deal: dict[int, list[ScrimmageMatch]] = {}
    for match in finished:
        by_deal.setdefault(match.index // 2, []).append(match)
    for deal in sorted(by_deal):
        pair = by_deal[deal]
        if len(pair) != 2:
            continue
        games = []
        for match in pair:
            seat = next(i for i, label in enumerate(match.names) if player_of(label)[0] == name)
            games.append((match.ranks[1 - seat], match.ranks[seat]))  # (A's rank, B's rank)
        counts[pair_halves(games[0], games[1])] += 1
    llr = test.llr(counts)
    return TestState(test, llr, test.decide(llr), tuple(counts))


@dataclass(frozen=True, slots=True)
class Report:
    """A scrimmage so far, or at its end (``done``; ``stopped`` says why it ended
    before its planned matches, "" when complete)."""

    scrimmage_id: str
    played: int
    planned: int
    lines: list[Line]
    matches: list[ScrimmageMatch]
    test: TestState | None = None
    done: bool = False
    stopped: str = ""


def stored_report(kept: StoredScrimmage) -> Report:
    """Returns the last report of a scrimmage as kept (``done`` once it ended)."""
    row = kept.row
    matches = list(kept.matches)
    test = None
    if row.sprt is not None:
        asked = json.loads(row.sprt)
        sprt = Sprt(asked["elo0"], asked["elo1"], asked["alpha"], asked["beta"])
        test = weigh(sprt, row.name, matches)
    return Report(
        row.scrimmage_id,
        len(matches),
        row.planned,
        table((row.name, *row.opponents), matches),
        matches,
        test,
        kept.status != PLAYING,
        kept.reason or "",
    )


@dataclass
class Scrimmage:
    """One scrimmage, checked and recorded: :meth:`reports` plays it."""

    ladder: Ladder
    challenge: Challenge
    scrimmage_id: str
    version: str
    matches: list[ScrimmageMatch] = field(default_factory=list)

    @property
    def names(self) -> tuple[str, ...]:
        """Returns its bots: the challenger, then its opponents."""
        return (self.challenge.name, *self.challenge.opponents)

    def report(self, done: bool = False, stopped: str = "") -> Report:
        """Returns the scrimmage so far."""
        test = self.challenge.sprt
        return Report(
            self.scrimmage_id,
            len(self.matches),
            self.challenge.matches,
            table(self.names, self.matches),
            list(self.matches),
            weigh(test, self.challenge.name, self.matches) if test is not None else None,
            done,
            stopped,
        )

    async def reports(self) -> AsyncGenerator[Report, None]:
        """Plays the scrimmage: returns a report once it starts, one after each match,
        and a last one (``done``). Closed early, it stops after the match under way
        (which ends and is kept)."""
        ladder = self.ladder
        lobby = ladder.lobby
        assert isinstance(lobby, LocalLobby)  # refused on a shared lobby (see begin)
        names = self.names
        stopped = ""
        going: list[asyncio.Future[ScrimmageMatch | None]] = []
        claimed = False
        try:
            yield self.report()
            await lobby.scheduler.claim(names)
            claimed = True
            seed = ""
            for index, (seated, deal, rotation) in enumerate(seatings(self.challenge)):
                why = self._why_stop()
                if why:
                    stopped = why
                    break
                if rotation == 0:
                    seed = new_server_seed()
                place = (
                    (DealSet(f"{self.scrimmage_id}-{deal}", rotation, len(seated)), seed)
                    if self.challenge.duplicate
                    else None
                )
                playing = ladder.settling.start(self._play(index, seated, place))
                going.append(playing)
                # Shielded: the match ends and is kept when the call or the ladder stops.
                match = await asyncio.shield(playing)
                if match is None:
                    stopped = "the server stops"
                    break
                self.matches.append(match)
                if match.status != MatchStatus.FINISHED:
                    stopped = f"match {match.match_id} was aborted"
                    break
                report = self.report()
                if report.test is not None and report.test.decision is not None:
                    stopped = f"the test decided: {report.test.decision}"
                    break
                if index + 1 < self.challenge.matches:
                    yield report
        except BaseException:
            if claimed:
                lobby.scheduler.unclaim(names)
            self._end(going, "stopped", stopped or "the call ended")
            raise
        lobby.scheduler.unclaim(names)
        # Shielded: a call cancelled meanwhile still ends the scrimmage's row (else the
        # name would hold a scrimmage under way until the next start).
        await asyncio.shield(self._end(going, "stopped" if stopped else "complete", stopped))
        yield self.report(done=True, stopped=stopped)

    def _why_stop(self) -> str:
        """Returns why the scrimmage cannot play its next match ("" when it can)."""
        ladder = self.ladder
        if ladder.closed:
            return "the server stops"
        gone = [n for n in self.names if not ladder.lobby.has_entered(n)]
        if gone:
            return f"{', '.join(gone)} left the ladder"
        suspended = ladder.store.suspended(list(self.names))
        if suspended:
            return f"{', '.join(sorted(suspended))} was suspended"
        return ""

    async def _play(
        self, index: int, seated: tuple[str, ...], place: tuple[DealSet, str] | None
    ) -> ScrimmageMatch | None:
        """Returns match ``index`` of the scrimmage as it ended and was kept (None when
        it could not be created: the server stops, or failed)."""
        ladder, store = self.ladder, self.ladder.store
        try:
            match_id, tokens, committed = await ladder.matches.create(seated, place)
        except Exception as e:  # LadderClosedError (a drain) or a failure
            log.warning("scrimmage_match_not_created", scrimmage=self.scrimmage_id, error=repr(e))
            return None
        if ladder.bosses is not None:
            ladder.bosses.play(seated, tokens)  # a league's boss is an opponent as any
        started = StartedMatch(
            match_id, seated, tuple(tokens), committed, place[0] if place else None
        )
        seed = place[1] if place else None
        # Kept as the scrimmage's before it is seated: a restart finds it so.
        await ladder.writer.run(
            store.start_scrimmage_match,
            self.scrimmage_id,
            index,
            match_id,
            seated,
            seed,
            ladder.clock(),
        )
        try:
            await ladder.lobby.seat(started)
            log.info("scrimmage_match_started", scrimmage=self.scrimmage_id, match=match_id)
            end = await ladder.matches.result(match_id)
        finally:
            ladder.lobby.unseat(started)
        await ladder.settling.stored(
            match_id, store.end_scrimmage_match, match_id, end.status, end.ranks, end.delivered
        )
        if place is None or place[0].index == place[0].size - 1:
            await ladder.writer.run(store.reveal_scrimmage, self._deal_of(match_id, index))
        return store.scrimmage_match(match_id)

    def _deal_of(self, match_id: str, index: int) -> list[str]:
        """Returns the matches of match ``index``'s deal (itself and those before it)."""
        players = self.challenge.players
        first = index - index % players if self.challenge.duplicate else index
        return [m.match_id for m in self.matches[first:]] + [match_id]

    def _end(
        self, going: Sequence[asyncio.Future[ScrimmageMatch | None]], status: str, why: str
    ) -> asyncio.Future[None]:
        """Returns the task that, once the matches going have ended, ends the
        scrimmage (its table stored) and completes its sealed records."""
        return self.ladder.settling.start(self._ended(going, status, why))

    async def _ended(
        self, going: Sequence[asyncio.Future[ScrimmageMatch | None]], status: str, why: str
    ) -> None:
        ladder, store = self.ladder, self.ladder.store
        await asyncio.gather(*going, return_exceptions=True)
        kept = store.scrimmage_matches(self.scrimmage_id)  # at most MAX_MATCHES rows
        self.matches = kept
        ids = [m.match_id for m in kept]
        await ladder.writer.run(store.reveal_scrimmage, ids)
        result = json.dumps([asdict(line) for line in table(self.names, kept)])
        await ladder.writer.run(
            store.end_scrimmage, self.scrimmage_id, status, why or None, result, ladder.clock()
        )
        log.info(
            "scrimmage_ended",
            scrimmage=self.scrimmage_id,
            bot=self.challenge.name,
            matches=len(kept),
            status=status,
            reason=why or None,
        )


async def begin(ladder: Ladder, key: str, asked: Challenge) -> Scrimmage:
    """Returns a scrimmage, checked and recorded as playing (see the module).

    Raises UnknownBotError for an unknown name or a wrong key, SuspendedError for a
    suspended challenger, ScrimmageError for bad counts or names, NotReadyError when
    it cannot start now, ScrimmageLimitError past the name's limits."""
    name = asked.name
    if not storable(name) or not ladder.store.check_key(name, key):
        raise UnknownBotError(f"bot {quoted(name)} is not registered or the key is wrong")
    suspension = ladder.store.suspension(name)
    if suspension is not None:
        raise SuspendedError(refusal(name, suspension))
    challenge = checked(asked)
    if not isinstance(ladder.lobby, LocalLobby):
        raise NotReadyError(
            "scrimmages run on a ladder of one host; this ladder's bots are scheduled "
            "across many hosts"
        )
    if ladder.held:
        raise NotReadyError("the ladder is paused: no scrimmage starts while it is")
    absent = [n for n in challenge.opponents if not ladder.lobby.has_entered(n)]
    if absent:
        raise NotReadyError(
            f"not entered in the ladder now: {', '.join(quoted(n) for n in absent)}; "
            "a scrimmage's opponents must be entered"
        )
    if not ladder.lobby.has_entered(name):
        raise NotReadyError(
            f"bot {quoted(name)} is not entered in the ladder now: it plays its "
            "scrimmage on its Enter stream, so enter it first"
        )
    suspended = sorted(ladder.store.suspended(list(challenge.opponents)))
    if suspended:
        raise NotReadyError(f"suspended: {', '.join(quoted(n) for n in suspended)}")
    entered = ladder.store.version(name) or ""
    if challenge.version and challenge.version != entered:
        raise NotReadyError(
            f"version {quoted(challenge.version)} of {quoted(name)} is not entered now "
            f"(its entry is version {quoted(entered or '-')}): enter that version first"
        )
    test = challenge.sprt
    row = ScrimmageRow(
        f"scrim-{secrets.token_hex(8)}",
        name,
        entered,
        challenge.opponents,
        challenge.players,
        challenge.matches,
        challenge.duplicate,
        json.dumps(asdict(test)) if test is not None else None,
        ladder.clock(),
    )
    await ladder.writer.run(
        ladder.store.start_scrimmage, row, ladder.discipline.bounds.scrimmages_per_hour
    )
    log.info(
        "scrimmage_started",
        scrimmage=row.scrimmage_id,
        bot=player(name, entered),
        opponents=list(challenge.opponents),
        players=challenge.players,
        matches=challenge.matches,
        duplicate=challenge.duplicate,
        sprt=test is not None,
    )
    return Scrimmage(ladder, challenge, row.scrimmage_id, entered)
