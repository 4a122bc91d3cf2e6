"""The scheduler: which waiting bots play together, and the loop that keeps them playing.

:func:`form_matches` is the pure core. Given the bots waiting (name, rating, games
played) and the free match slots, it returns the matches to start:

- each of 2 to 5 seats (the policy's range), never one bot twice in a match;
- the least played bot anchors each match, so newcomers and unlucky bots catch up;
- the other seats are drawn at random, weighted towards ratings close to the
  anchor's (and towards bots that played less), so close matches are the rule and
  every pairing still happens now and then;
- at most as many matches as there are free slots (the concurrency limit);
- with leagues on, only bots of one league play together (its boss among them).

:class:`Scheduler` is the asyncio loop around it: bots come (:meth:`Scheduler.join`)
and go (:meth:`Scheduler.leave`); a bot is waiting while it is joined and not in a
match; whenever that changes, and a short settling pause has passed (so that bots
arriving together are matched together), the loop forms matches and starts each as
a task. A bot that leaves mid-match stays seated: the server plays its seat by the
default policy to the end.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass

import structlog

log = structlog.get_logger()


@dataclass(frozen=True, slots=True)
class Waiting:
    """A bot waiting for a match: its name, rating (mu), rated games so far, and its
    league (its place in the order, 0 the lowest; 0 for all when leagues are off)."""

    name: str
    rating: float
    games: int
    league: int = 0


@dataclass(frozen=True, slots=True)
class Policy:
    """How matches are formed.

    ``closeness`` is the rating difference at which a candidate's weight halves;
    ``concurrency`` the most ladder matches running at once.
    """

    min_players: int = 2
    max_players: int = 5
    concurrency: int = 4
    closeness: float = 4.0

    def __post_init__(self) -> None:
        if not 2 <= self.min_players <= self.max_players <= 5:
            raise ValueError(
                f"ladder players {self.min_players}-{self.max_players}: "
                "need 2 <= min <= max <= 5 (R-SETUP-1)"
            )
        if self.concurrency < 1:
            raise ValueError(f"ladder concurrency {self.concurrency}: need at least 1")
        if self.closeness <= 0:
            raise ValueError(f"ladder closeness {self.closeness}: need more than 0")


def parse_players(text: str) -> tuple[int, int]:
    """Returns (min, max) from ``"2-5"`` or ``"3"``; raises ValueError otherwise."""
    low, dash, high = text.partition("-")
    try:
        lo, hi = int(low), int(high if dash else low)
    except ValueError:
        raise ValueError(f"ladder players {text!r}: expected N or MIN-MAX, e.g. 2-5") from None
    Policy(lo, hi)  # raises for a range the rules do not allow
    return lo, hi


def form_matches(
    waiting: Sequence[Waiting], policy: Policy, running: int, rng: random.Random
) -> list[tuple[str, ...]]:
    """Returns the matches to start now, each a tuple of bot names in seat order."""
    pool: dict[str, Waiting] = {}
    for w in waiting:
        pool.setdefault(w.name, w)
    # Least played first; a random tie-break lets equally played bots take turns.
    queue = sorted(pool.values(), key=lambda w: (w.games, rng.random()))
    matches: list[tuple[str, ...]] = []
    slots = policy.concurrency - running
    while slots > 0 and len(queue) >= policy.min_players:
        anchor, league = queue[0], [w for w in queue if w.league == queue[0].league]
        if len(league) < policy.min_players:
            # Too few of the anchor's league wait: the next league's bots go on.
            queue = [w for w in queue if w.league != anchor.league]
            continue
        size = rng.randint(policy.min_players, min(policy.max_players, len(league)))
        queue.remove(anchor)
        league.remove(anchor)
        least = min([anchor.games, *(w.games for w in league)])
        seated = [anchor]
        for _ in range(size - 1):
            weights = [_weight(anchor, w, policy, least) for w in league]
            chosen = league.pop(rng.choices(range(len(league)), weights)[0])
            queue.remove(chosen)
            seated.append(chosen)
        rng.shuffle(seated)
        matches.append(tuple(w.name for w in seated))
        slots -= 1
    return matches


def _weight(anchor: Waiting, other: Waiting, policy: Policy, least: int) -> float:
    closeness = 1.0 / (1.0 + ((anchor.rating - other.rating) / policy.closeness) ** 2)
    return closeness / (1.0 + other.games - least)


class Scheduler:
    """Forms matches from the joined, idle bots for as long as it runs.

    ``waiting(names)`` returns those bots as :class:`Waiting` (rating, games); the
    ``play`` given to :meth:`run` plays one match to its end (the scheduler starts it
    as a task and frees its bots after).
    """

    def __init__(
        self,
        policy: Policy,
        waiting: Callable[[list[str]], list[Waiting]],
        *,
        rng: random.Random | None = None,
        settle: float = 0.25,
    ) -> None:
        self.policy = policy
        self._describe = waiting
        self._rng = rng or random.Random()
        self._settle = settle
        self._joined: dict[str, int] = {}
        self._busy: set[str] = set()
        self._idle_since: dict[str, float] = {}  # waiting bot -> since (time.monotonic)
        self._tasks: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._held = False
        # Bots a scrimmage waits for (``claim``): kept out of the matches formed.
        self._wanted: dict[str, int] = {}
        # Set (and replaced) whenever a bot's match ends: what ``claim`` waits on.
        self._freed = asyncio.Event()

    def hold(self, held: bool) -> None:
        """Stops forming matches while ``held`` (a competition's freeze and finals);
        the matches under way go on."""
        self._held = held
        if not held:
            self._wake.set()

    def wake(self) -> None:
        """Forms matches again soon, though no bot came or went (a quota changed)."""
        self._wake.set()

    def join(self, name: str) -> None:
        """Makes ``name`` available for matches (counted: one per open Enter stream)."""
        self._joined[name] = self._joined.get(name, 0) + 1
        if name not in self._busy:
            self._idle_since.setdefault(name, time.monotonic())
        self._wake.set()

    def leave(self, name: str) -> None:
        """Undoes one :meth:`join`; a match the bot is in goes on without it."""
        left = self._joined.get(name, 0) - 1
        if left > 0:
            self._joined[name] = left
        else:
            self._joined.pop(name, None)
            self._idle_since.pop(name, None)
        self._wake.set()

    def is_joined(self, name: str) -> bool:
        """Returns whether ``name`` has an Enter stream open (busy in a match or not)."""
        return name in self._joined

    def take(self, names: Collection[str]) -> list[str]:
        """Takes the joined bots ``names``, none of them in a match, out of the matches
        this scheduler forms (for a match of their own: an unrated one); returns those
        of ``names`` not joined or in a match, having taken none of them then."""
        missing = [n for n in names if n not in self._joined or n in self._busy]
        if not missing:
            self._busy.update(names)
            for name in names:
                self._idle_since.pop(name, None)
        return missing

    def give_back(self, names: Collection[str]) -> None:
        """Lets the bots ``names`` wait again once their match has ended (the end of a
        match this scheduler formed, or of one :meth:`take` took them for)."""
        self._free(names)

    @property
    def waiting(self) -> list[str]:
        """Returns the joined bots not in a match, nor waited for by a scrimmage."""
        return [n for n in self._joined if n not in self._busy and n not in self._wanted]

    async def claim(self, names: Sequence[str]) -> None:
        """Returns once ``names`` are all out of the matches this scheduler plays, and
        holds them out of the matches it forms until :meth:`unclaim` (a scrimmage
        plays them meanwhile). While it waits, none of them is seated anew, so a bot
        in a match is claimed when that match ends. Cancelled, it claims nothing."""
        for name in names:
            self._wanted[name] = self._wanted.get(name, 0) + 1
        try:
            while any(n in self._busy for n in names):
                await self._freed.wait()
        finally:
            for name in names:
                left = self._wanted[name] - 1
                if left:
                    self._wanted[name] = left
                else:
                    del self._wanted[name]
        self._busy.update(names)
        for name in names:
            self._idle_since.pop(name, None)

    def unclaim(self, names: Sequence[str]) -> None:
        """Lets ``names``, claimed, be seated in the ladder's matches again."""
        self._free(names)

    def _free(self, names: Collection[str]) -> None:
        self._busy.difference_update(names)
        now = time.monotonic()
        for name in names:
            if name in self._joined:
                self._idle_since.setdefault(name, now)
        freed, self._freed = self._freed, asyncio.Event()
        freed.set()
        self._wake.set()

    def longest_wait(self, besides: Collection[str] = ()) -> float:
        """Returns how many seconds the bot waiting longest has waited (0 when none
        waits): since it joined, or since its last match ended; the bots ``besides``
        left out (the leagues' bosses, who wait for as long as the server runs)."""
        since = [t for name, t in self._idle_since.items() if name not in besides]
        if not since:
            return 0.0
        return time.monotonic() - min(since)

    @property
    def running(self) -> int:
        """Returns how many matches this scheduler is playing now."""
        return len(self._tasks)

    async def run(self, play: Callable[[tuple[str, ...]], Awaitable[None]]) -> None:
        """Forms matches and starts ``play(names)`` on each until cancelled; then
        cancels the matches it started."""
        try:
            while True:
                await self._wake.wait()
                # Settle: bots that arrive together (a match just ended) are matched together.
                await asyncio.sleep(self._settle)
                self._wake.clear()
                self._form(play)
        finally:
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)

    def _form(self, play: Callable[[tuple[str, ...]], Awaitable[None]]) -> None:
        idle = self.waiting
        if (
            self._held
            or len(idle) < self.policy.min_players
            or self.running >= self.policy.concurrency
        ):
            return
        for names in form_matches(self._describe(idle), self.policy, self.running, self._rng):
            self._busy.update(names)
            for name in names:
                self._idle_since.pop(name, None)
            task = asyncio.create_task(self._match(names, play), name=f"ladder-match-{names}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _match(
        self, names: tuple[str, ...], play: Callable[[tuple[str, ...]], Awaitable[None]]
    ) -> None:
        try:
            await play(names)
        except asyncio.CancelledError:
            raise
        except Exception:
            # One failed match must not stop the ladder; its bots go back to waiting.
            log.exception("ladder_match_failed", names=list(names))
        finally:
            self.give_back(names)
