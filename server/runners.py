"""Every match of one server: creating them, finding a seat by its token, awaiting results.

This is also the programmatic way to run matches, used by the ladder
(``server/ladder/``) and by tests that run a server in-process::

    runner = arena.runners.create_match(3, names=["ada", "bob", "cy"], ladder=True,
                                     deadline_ms=2000)
    runner.id, runner.tokens          # the match id; one seat token per seat, in seat order
    runner.match                      # the state machine (server.match.Match)
    result = await runner.result()    # once the record is stored (never before)
    result.status                     # MatchStatus.FINISHED or MatchStatus.ABORTED
    result.winners, result.ranks, result.delivered, result.names, result.record

``create_match`` raises ``Draining`` once the server drains (SIGTERM) and
``mammamia.IllegalActionError`` for a bad setup (player count, colours, first
player). A match waits until every seat has joined (Join, Observe or Play with
its token) or ``start_timeout`` passes, then runs; a seat that never comes is
played by the default policy after three missed deadlines, so every match ends.
``await runners.result(match_id)`` does the same as ``runner.result()`` by id.

How extensions (the ladder) plug into the server is described in ``server.app``.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
from collections.abc import Collection, Sequence

import structlog

from mammamia import State, new_game
from mammamia.actions import Action
from mammamia.fairness import DealSet, Fairness

from .clock import Clock, SystemClock
from .db.journal import Journal
from .db.matches import Storage
from .inputs import replay, setup_of, token_hash
from .match import DEFAULT_DEADLINE_MS, Match, Settings
from .metrics import Metrics
from .options import MAX_DEADLINE_MS, MAX_TIME_BANK_MS
from .runner import MatchResult, Runner
from .status import MatchStatus
from .streams import Open
from .tokens import new_match_id, new_token

log = structlog.get_logger()


class Draining(RuntimeError):
    """The server is draining and starts no new match."""


class Runners:
    """The matches of one server process, on one event loop."""

    def __init__(
        self,
        storage: Storage,
        *,
        deadline_ms: int = DEFAULT_DEADLINE_MS,
        start_timeout: float = 30.0,
        keep_ended: float = 60.0,
        keep_retired: float = 600.0,
        max_ended: int = 2000,
        max_retired: int = 100_000,
        clock: Clock | None = None,
        journal: bool = True,
        metrics: Metrics | None = None,
    ) -> None:
        self.storage = storage
        self.metrics = metrics
        # Every match dealt from seeds is written ahead, so a restart resumes it.
        self.journal: Journal | None = storage.open_journal() if journal else None
        self.clock: Clock = clock or SystemClock()
        self.deadline_ms = deadline_ms
        self.start_timeout = start_timeout
        # An ended match stays held for a minute, long enough for a bot that lost
        # its connection near the end to come back and read it (records stay in
        # storage); holding them longer costs memory at every match a busy server ends.
        # Both are also bounded in count, so that memory reaches a plateau however many
        # matches a minute end: past the bound the oldest go first.
        self.keep_ended = keep_ended  # seconds an ended match stays held
        self.keep_retired = keep_retired  # then seconds its tokens are still known
        self.max_ended = max_ended  # ended matches held at most
        self.max_retired = max_retired  # retired tokens known at most
        self.matches: dict[str, Runner] = {}
        self._seats: dict[str, tuple[Runner, int]] = {}  # token hash -> match, seat
        self._ended_order: dict[str, Runner] = {}  # ended and held, oldest first
        # Token hash -> (id of a match no longer held, when it is forgotten), oldest
        # first: they are swept from the front, with no timer each (a busy server
        # retires thousands of tokens a minute, for keep_retired seconds).
        self._retired: dict[str, tuple[str, float]] = {}
        self._tasks: set[asyncio.Task[MatchResult]] = set()
        self.accepting = True
        self.streams_open = Open()  # the streams open on this server, of every match
        self._unended = 0  # matches held that have not ended
        if metrics is not None:
            if self.journal is not None:
                self.journal.timed = metrics.journal_timer()
            metrics.count_running(lambda: (self._unended, self.streams_open.count))

    def create_match(
        self,
        players: int,
        *,
        seed: int | None = None,
        colours: Sequence[str] | None = None,
        first_player: int | None = None,
        deadline_ms: int = 0,
        time_bank_ms: int = 0,
        names: Sequence[str] = (),
        ladder: bool = False,
        start_timeout: float | None = None,
        game: State | None = None,
        played: Sequence[tuple[int, Action]] = (),
        deal_set: tuple[DealSet, str] | None = None,
        match_id: str | None = None,
        tokens: Sequence[str] | None = None,
    ) -> Runner:
        """Returns the runner of a new match, stored as waiting and started in the background.

        ``deadline_ms`` 0 means the server's default. ``game`` plays a given game
        instead of shuffling one from ``seed``, and ``played`` are the actions that
        led to it from its deal (a match that starts mid-game, as the conformance
        kit's do). ``deal_set`` makes the match one of a ladder duplicate set: its
        place in the set and the set's server seed (mammamia.fairness). ``match_id`` and
        ``tokens`` (one per seat) are the match's when given (the ladder of many hosts
        draws them before it records the match), new ones otherwise. Raises Draining
        while draining, IllegalActionError for a bad setup and ValueError for a bad time
        control or a wrong number of tokens.
        """
        if not self.accepting:
            raise Draining("the server is shutting down and starts no new match")
        if tokens is not None and len(tokens) != players:
            raise ValueError(
                f"a match of {players} players needs {players} seat tokens, got {len(tokens)}"
            )
        match_id = match_id or new_match_id()
        fairness = None
        if game is None:
            # The game is dealt when the match starts, from a seed committed to now
            # and the seats' client seeds (mammamia.fairness); until then this one
            # holds the seats and colours only.
            drawn = first_player is None
            if deal_set is not None:
                fairness = Fairness.in_set(match_id, players, drawn, *deal_set)
            elif seed is None:
                fairness = Fairness.drawn(match_id, players, drawn)
            else:
                fairness = Fairness.chosen(match_id, seed, players, drawn)
            seed = fairness.seed
            game = new_game(players, seed, colours, first_player)
        elif seed is None:
            seed = secrets.randbits(63)
        deadline_ms = deadline_ms or self.deadline_ms
        if not 1 <= deadline_ms <= MAX_DEADLINE_MS:
            raise ValueError(f"deadline_ms must be 1..{MAX_DEADLINE_MS}, got {deadline_ms!r}")
        if not 0 <= time_bank_ms <= MAX_TIME_BANK_MS:
            raise ValueError(f"time_bank_ms must be 0..{MAX_TIME_BANK_MS}, got {time_bank_ms!r}")
        settings = Settings(
            deadline_ms=deadline_ms, time_bank_ms=time_bank_ms, ladder=ladder, names=list(names)
        )
        state = Match(match_id, game, seed, settings, self.clock.now(), played, fairness)
        tokens = (
            tuple(tokens) if tokens is not None else tuple(new_token() for _ in range(game.players))
        )
        hashes = tuple(token_hash(t) for t in tokens)
        journal = self.journal if fairness is not None else None
        if journal is not None:
            journal.begin(match_id, setup_of(state, hashes, first_player))
        runner = Runner(
            state,
            tokens,
            self.storage,
            self.clock,
            self.start_timeout if start_timeout is None else start_timeout,
            token_hashes=hashes,
            journal=journal,
            opened=self.streams_open,
            metrics=self.metrics,
        )
        self._hold_match(runner)
        # The seed is the whole deal: it is not logged while the match runs (the
        # record shows it once the match has ended).
        log.info(
            "match_created",
            match=runner.id,
            players=game.players,
            deadline_ms=deadline_ms,
            ladder=ladder,
        )
        return runner

    def resume(self, only: Collection[str] | None = None) -> list[str]:
        """Returns the ids of the matches resumed from the journal: this server's own
        (a restart: their seats come back with the tokens they hold), or the matches
        ``only`` (taken over from a host whose lease lapsed, ``server.leases``). Those
        that do not replay are left for the caller to mark aborted."""
        if self.journal is None:
            return []
        resumed = []
        for unfinished in self.journal.unfinished(only):
            try:
                state = replay(unfinished)
            except Exception as e:  # a journal this server cannot replay
                log.error("match_not_resumed", match=unfinished.match_id, error=repr(e))
                self.journal.forget(unfinished.match_id)
                continue
            now = self.clock.now()
            state.restamp(now)
            runner = Runner(
                state,
                (),
                self.storage,
                self.clock,
                self.start_timeout,
                token_hashes=tuple(unfinished.setup["tokens"]),
                journal=self.journal,
                resumed=True,
                opened=self.streams_open,
                metrics=self.metrics,
            )
            self._hold_match(runner)
            resumed.append(runner.id)
            log.info(
                "match_resumed",
                match=runner.id,
                status=state.status,
                actions=len(state.actions),
                inputs=len(unfinished.inputs),
            )
        return resumed

    def _hold_match(self, runner: Runner) -> None:
        self.matches[runner.id] = runner
        for seat, hashed in enumerate(runner.token_hashes):
            self._seats[hashed] = (runner, seat)
        task = asyncio.ensure_future(runner.result())
        self._tasks.add(task)
        self._unended += 1
        task.add_done_callback(functools.partial(self._ended, runner=runner))

    def _ended(self, task: asyncio.Task[MatchResult], *, runner: Runner) -> None:
        self._tasks.discard(task)
        self._unended -= 1
        if not task.cancelled() and task.exception() is not None:
            log.error("match_failed", match=runner.id, error=repr(task.exception()))
        elif self.metrics is not None and not task.cancelled():
            self.metrics.match_ended(task.result().status)
        if runner.journal is not None and runner.ended:
            runner.journal.forget(runner.id)  # the stored record holds it all now
        # Keep an ended match a while for clients that reconnect to read its end.
        self._ended_order[runner.id] = runner
        while len(self._ended_order) > self.max_ended:
            self._forget(next(iter(self._ended_order.values())))
        # The timers name the match by its id, never hold it: a match forgotten by the
        # count bound must not stay in memory until its time comes.
        self.clock.call_at(
            self.clock.now() + self.keep_ended, functools.partial(self._forget_id, runner.id)
        )

    def _forget_id(self, match_id: str) -> None:
        runner = self._ended_order.get(match_id)
        if runner is not None:
            self._forget(runner)

    def _forget(self, runner: Runner) -> None:
        if self._ended_order.pop(runner.id, None) is None:
            return  # forgotten already (count bound, then timer)
        self.matches.pop(runner.id, None)
        runner.streams.expire()  # a stream its client stopped reading ends now
        now = self.clock.now()
        # A retired token is remembered a while, then forgotten too, so that a server
        # that runs for months holds only the tokens of recent matches.
        until = now + self.keep_retired
        for hashed in runner.token_hashes:
            self._seats.pop(hashed, None)
            self._retired[hashed] = (runner.id, until)
        retired = self._retired
        while retired:
            oldest = next(iter(retired))
            if len(retired) <= self.max_retired and retired[oldest][1] > now:
                break
            del retired[oldest]

    def seat_of(self, token: str) -> tuple[Runner, int] | None:
        """Returns (runner, seat) for a seat token, or None when unknown."""
        return self._seats.get(token_hash(token))

    def retired(self, token: str) -> str | None:
        """Returns the id of the ended match a token belonged to, once no longer held
        (for ``keep_retired`` seconds; None after that, as for an unknown token)."""
        found = self._retired.get(token_hash(token))
        if found is None or found[1] <= self.clock.now():
            return None
        return found[0]

    def bench(self, match_id: str, seat: int) -> bool:
        """Hands a seat of a running match to the default policy for the rest of it:
        its token is no longer held here (a new stream of it is refused as unknown) and
        its open streams end, so each of its decisions is defaulted at its deadline
        (as for a seat with no stream). Returns False when the match does not run here."""
        runner = self.matches.get(match_id)
        if runner is None or runner.ended or not 0 <= seat < runner.players:
            return False
        self._seats.pop(runner.token_hashes[seat], None)
        for follower in list(runner.streams.followers):
            if follower.viewer == seat:
                follower.stop()
        return True

    def get(self, match_id: str) -> Runner | None:
        """Returns the runner of a match held by this server, or None."""
        return self.matches.get(match_id)

    async def result(self, match_id: str) -> MatchResult:
        """Returns a match's result once its record is stored; KeyError when unknown."""
        return await self.matches[match_id].result()

    @property
    def running(self) -> list[Runner]:
        """Returns the runners of the matches that have not ended."""
        return [r for r in self.matches.values() if not r.ended]

    async def drain(self, grace: float) -> None:
        """Stops creating matches, lets running ones finish for ``grace`` seconds, then
        aborts the rest; returns once every match's record is stored."""
        self.accepting = False
        for runner in self.running:
            if runner.match.status == MatchStatus.WAITING:
                runner.abort("server shut down before the match started")
        running = [runner.result() for runner in self.running]
        if running:
            log.info("draining", matches=len(running), grace=grace)
            _, pending = await asyncio.wait(
                [asyncio.ensure_future(r) for r in running], timeout=grace
            )
            if pending:
                for runner in self.running:
                    runner.abort("server shut down during the match")
                await asyncio.wait(pending, timeout=30)
