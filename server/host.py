"""Every match of one server: creating them, finding a seat by its token, awaiting results.

This is also the programmatic way to run matches, used by the ladder
(``server/ladder/``) and by tests that run a server in-process::

    match = arena.host.create_match(3, names=["ada", "bob", "cy"], ladder=True,
                                    deadline_ms=2000)
    match.id, match.tokens            # the match id; one seat token per seat, in seat order
    result = await match.result()     # once the record is stored (never before)
    result.status                     # "finished" or "aborted"
    result.winners, result.ranks, result.delivered, result.names, result.record

``create_match`` raises ``HostClosed`` once the server drains (SIGTERM) and
``mammamia.IllegalActionError`` for a bad setup (player count, colours, first
player). A match waits until every seat has joined (Join, Observe or Play with
its token) or ``start_timeout`` passes, then runs; a seat that never comes is
played by the default policy after three missed deadlines, so every match ends.
``await host.result(match_id)`` does the same as ``match.result()`` by id.

How extensions (the ladder) plug into the server is described in ``server.app``.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
from collections.abc import Sequence

import structlog

from mammamia import State, new_game

from . import storage as st
from .match import DEFAULT_DEADLINE_MS, Match, MatchResult, Settings
from .options import MAX_DEADLINE_MS, MAX_TIME_BANK_MS
from .tokens import new_match_id

log = structlog.get_logger()


class HostClosed(RuntimeError):
    """The server is draining and starts no new match."""


class Host:
    """The matches of one server process, on one event loop."""

    def __init__(self, storage: st.Storage, *, deadline_ms: int = DEFAULT_DEADLINE_MS,
                 start_timeout: float = 30.0, keep_ended: float = 60.0,
                 keep_retired: float = 600.0) -> None:
        self.storage = storage
        self.deadline_ms = deadline_ms
        self.start_timeout = start_timeout
        # An ended match stays held for a minute, long enough for a bot that lost
        # its connection near the end to come back and read it (records stay in
        # storage); holding them longer costs memory at every match a busy server ends.
        self.keep_ended = keep_ended        # seconds an ended match stays held
        self.keep_retired = keep_retired    # then seconds its tokens are still known
        self.matches: dict[str, Match] = {}
        self._seats: dict[str, tuple[Match, int]] = {}
        self._retired: dict[str, str] = {}      # token -> id of a match no longer held
        self._tasks: set[asyncio.Task[MatchResult]] = set()
        self.accepting = True

    def create_match(self, players: int, *, seed: int | None = None,
                     colours: Sequence[str] | None = None, first_player: int | None = None,
                     deadline_ms: int = 0, time_bank_ms: int = 0,
                     names: Sequence[str] = (), ladder: bool = False,
                     start_timeout: float | None = None, game: State | None = None) -> Match:
        """Returns a new match, stored as waiting and started in the background.

        ``deadline_ms`` 0 means the server's default. ``game`` (for tests) plays a
        given start instead of shuffling one from ``seed``. Raises HostClosed while
        draining and IllegalActionError for a bad setup.
        """
        if not self.accepting:
            raise HostClosed("the server is shutting down and starts no new match")
        if seed is None:
            seed = secrets.randbits(63)
        if game is None:
            game = new_game(players, seed, colours, first_player)
        deadline_ms = deadline_ms or self.deadline_ms
        if not 1 <= deadline_ms <= MAX_DEADLINE_MS:
            raise ValueError(f"deadline_ms must be 1..{MAX_DEADLINE_MS}, got {deadline_ms!r}")
        if not 0 <= time_bank_ms <= MAX_TIME_BANK_MS:
            raise ValueError(f"time_bank_ms must be 0..{MAX_TIME_BANK_MS}, got {time_bank_ms!r}")
        settings = Settings(deadline_ms=deadline_ms, time_bank_ms=time_bank_ms, ladder=ladder,
                            start_timeout=self.start_timeout if start_timeout is None
                            else start_timeout, names=list(names))
        match = Match(new_match_id(), game, seed, settings, self.storage)
        self.matches[match.id] = match
        for seat, token in enumerate(match.tokens):
            self._seats[token] = (match, seat)
        task = asyncio.ensure_future(match.run())
        self._tasks.add(task)
        task.add_done_callback(functools.partial(self._ended, match=match))
        log.info("match_created", match=match.id, players=game.players, seed=seed,
                 deadline_ms=deadline_ms, ladder=ladder)
        return match

    def _ended(self, task: asyncio.Task[MatchResult], *, match: Match) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("match_failed", match=match.id, error=repr(task.exception()))
        # Keep an ended match a while for clients that reconnect to read its end.
        asyncio.get_running_loop().call_later(self.keep_ended, self._forget, match)

    def _forget(self, match: Match) -> None:
        self.matches.pop(match.id, None)
        for token in match.tokens:
            self._seats.pop(token, None)
            self._retired[token] = match.id
        # A retired token is remembered a while, then forgotten too, so that a server
        # that runs for months holds only the tokens of recent matches.
        asyncio.get_running_loop().call_later(self.keep_retired, self._unretire, match)

    def _unretire(self, match: Match) -> None:
        for token in match.tokens:
            self._retired.pop(token, None)

    def seat_of(self, token: str) -> tuple[Match, int] | None:
        """Returns (match, seat) for a seat token, or None when unknown."""
        return self._seats.get(token)

    def retired(self, token: str) -> str | None:
        """Returns the id of the ended match a token belonged to, once no longer held
        (for ``keep_retired`` seconds; None after that, as for an unknown token)."""
        return self._retired.get(token)

    def get(self, match_id: str) -> Match | None:
        """Returns a match held by this server, or None."""
        return self.matches.get(match_id)

    async def result(self, match_id: str) -> MatchResult:
        """Returns a match's result once its record is stored; KeyError when unknown."""
        return await self.matches[match_id].result()

    @property
    def running(self) -> list[Match]:
        """Returns the matches that have not ended."""
        return [m for m in self.matches.values() if not m.ended]

    async def drain(self, grace: float) -> None:
        """Stops creating matches, lets running ones finish for ``grace`` seconds, then
        aborts the rest; returns once every match's record is stored."""
        self.accepting = False
        for m in self.running:
            if m.status == st.WAITING:
                m.abort("server shut down before the match started")
        running = [m.result() for m in self.running]
        if running:
            log.info("draining", matches=len(running), grace=grace)
            _, pending = await asyncio.wait([asyncio.ensure_future(r) for r in running],
                                            timeout=grace)
            if pending:
                for m in self.running:
                    m.abort("server shut down during the match")
                await asyncio.wait(pending, timeout=30)
