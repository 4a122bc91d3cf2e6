"""The conformance kit: a server in-process, one match per scenario, a client command
that plays one seat of it, and a verdict per scenario.

The kit starts its own server (``server.app.create_server``) on 127.0.0.1, a free
port and a temporary SQLite file. For each scenario it creates a two-player match
through the runners, plays the other seat itself (a seeded random option for each of
its decisions, answered through ``Runner.answer`` as soon as it is asked) and runs
the client command with ``{server}`` and ``{token}`` substituted. It watches the
match through the runner's hooks (``Runner.on_entries``: every decision asked and
the end; ``Runner.on_answer``: the ruling on each of the client's answers), and
judges from them, from the match's record (``meta.timeouts``, ``meta.autopilot``)
and from the client's exit.

Every scenario asks the same of the client: answer every decision before its
default time, with no refused answer, and exit with code 0 once the match has
ended (within ``END_GRACE`` seconds), never before. The scenarios add:

- ``turns``: a whole match from the deal (``end`` reports its exit on its own row);
- ``minimale``, ``monotoni``, ``add-from-hand``, ``bombastica``, ``decline``: the
  match starts mid-game at a resolution decision of that kind for the client's seat
  (found by ``server.conformance.positions``); it must answer it with a legal option;
- ``resume``: the client reaches the server through a proxy that cuts every
  connection once, after the client's third answer; it must reconnect and answer
  the decision that is then open (the new stream's ``Snapshot.decision``);
- ``refused``: the kit answers the client's first decision itself (its last
  option) once the request is on its way to the client (a stream of the seat has
  read it and bytes went down through the kit's proxy), so the client's own answer
  is refused (``REFUSAL_ALREADY_ANSWERED``) or accepted as a repeat; it must play on;
- ``deadline``: a per-decision deadline of 1000 ms and no time bank.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mammamia import Resolve, State
from mammamia.actions import Action

from ..answers import Refusal, Ruling
from ..app import Arena, create_server
from ..events import Asked, Decision, Ended, Entry
from ..runner import Runner
from ..streams import Follower
from ..tokens import new_organiser_key
from . import positions, startup
from .proxy import Proxy

SCENARIOS: Final = (
    "turns",
    "end",
    "minimale",
    "monotoni",
    "add-from-hand",
    "bombastica",
    "decline",
    "resume",
    "refused",
    "deadline",
)
"""Every scenario, in the order the kit runs and prints them."""

DECISION_SCENARIOS: Final = ("minimale", "monotoni", "add-from-hand", "bombastica", "decline")

END_GRACE: Final = 5.0
"""Seconds the client has to exit once its match has ended."""

CUT_AFTER: Final = 3
"""The ``resume`` scenario cuts the connections after the client's third answer."""

TAKE_AT_LATEST: Final = 0.25
"""The ``refused`` scenario takes the client's first decision once bytes have gone
down to the client after it was asked, or this many seconds after it was asked."""

SHORT_DEADLINE_MS: Final = 1000
STDERR_LINES: Final = 20
PLAYERS: Final = 2
KIT_NAME: Final = "conformance-kit"

Progress = Callable[[str], None]


@dataclass(slots=True)
class Verdict:
    """One scenario's result: ``why`` is one line."""

    name: str
    passed: bool
    why: str
    seconds: float = 0.0
    match_id: str = ""
    exit_code: int | None = None
    stderr_tail: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Returns the verdict as a JSON object."""
        return {
            "name": self.name,
            "passed": self.passed,
            "why": self.why,
            "seconds": round(self.seconds, 3),
            "match": self.match_id,
            "exit_code": self.exit_code,
            "stderr_tail": self.stderr_tail,
        }


@dataclass(slots=True)
class Plan:
    """How one scenario's match is set up."""

    name: str
    seed: int
    seat: int = 0
    game: State | None = None
    played: tuple[tuple[int, Action], ...] = ()
    deadline_ms: int = 0
    proxy: bool = False
    cut: bool = False
    refuse_first: bool = False
    target: str | None = None  # a decision scenario: what its first decision is


class Session:
    """One scenario's match as the kit sees it, through the runner's hooks."""

    def __init__(self, runner: Runner, plan: Plan, proxy: Proxy | None) -> None:
        self.runner = runner
        self.plan = plan
        self.seat = plan.seat
        self.proxy = proxy
        self.rng = random.Random(f"conformance:{plan.name}:{plan.seed}")
        self.loop = asyncio.get_running_loop()
        self.asked: dict[str, Decision] = {}  # the client's decisions, in order
        self.deciding: dict[str, str | None] = {}  # the order each one resolved
        self.answers: list[tuple[str, Ruling, float]] = []  # the client's, with the time
        self.kit_answered: dict[str, int] = {}  # the client's decisions the kit took
        self.accepted: dict[str, float] = {}  # decision -> when the client's came
        self.ended = asyncio.Event()
        self.ended_at: float | None = None  # monotonic
        self.cut_at: float | None = None
        self.cut_connections = 0
        self.open_at_cut: str | None = None  # the decision to answer after the cut
        self.via_snapshot = False
        self._streams_then: set[Follower] = set()
        self._kit = False
        self._refusing = False
        self._armed: Decision | None = None
        self._armed_at = 0
        if proxy is not None and plan.refuse_first:
            proxy.on_down = self._down
        runner.on_entries.append(self._entries)
        runner.on_answer.append(self._answered)

    # -- the hooks -------------------------------------------------------------------

    def _entries(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            if isinstance(entry, Asked):
                d = entry.decision
                if d.seat != self.seat:
                    self.loop.call_soon(self._play, d)
                    continue
                self.asked[d.id] = d
                self.deciding[d.id] = None if d.view is None else d.view.deciding
                if self.cut_at is not None and self.open_at_cut is None:
                    self._opened(d.id)
                if self.plan.refuse_first and not self._refusing:
                    self._refusing = True
                    self._armed = d
                    self._armed_at = len(self.runner.match.log)
                    self.loop.call_later(TAKE_AT_LATEST, self._take)
            elif isinstance(entry, Ended):
                self.ended_at = time.monotonic()
                self.ended.set()

    def _answered(self, seat: int, decision_id: str, outcome: Ruling) -> None:
        if self._kit or seat != self.seat:
            return
        self.answers.append((decision_id, outcome, time.time()))
        if outcome.accepted and not outcome.repeated:
            self.accepted[decision_id] = time.time()
            if (
                self.plan.cut
                and self.proxy is not None
                and self.cut_at is None
                and len(self.accepted) == CUT_AFTER
            ):
                self.cut_connections = self.proxy.connections
                self.proxy.cut()
                self.cut_at = time.monotonic()
                open_now = self.runner.match.decision
                if open_now is not None and open_now.seat == self.seat:
                    self._opened(open_now.id)
        if decision_id == self.open_at_cut and outcome.accepted:
            # Answered on a stream that opened after the decision was asked: the
            # decision reached the client in that stream's Snapshot.decision.
            self.via_snapshot = any(
                f.viewer == self.seat and f not in self._streams_then
                for f in self.runner.streams.followers
            )

    def _opened(self, decision_id: str) -> None:
        self.open_at_cut = decision_id
        self._streams_then = {f for f in self.runner.streams.followers if f.viewer == self.seat}

    # -- the kit's own answers ---------------------------------------------------------

    def _answer(self, d: Decision, option: int) -> bool:
        if self.runner.match.decision is not d:
            return False
        self._kit = True
        try:
            return self.runner.answer(d.seat, d.id, option, None).accepted
        finally:
            self._kit = False

    def _play(self, d: Decision) -> None:
        self._answer(d, self.rng.randrange(len(d.options)))

    def _down(self) -> None:
        # Bytes went down to the client after a stream of its seat had read the request
        # from the log: the request is on its way (or there). Take the decision now,
        # before the client's answer can come back.
        if self._armed is not None and any(
            f.viewer == self.seat and f.cursor >= self._armed_at
            for f in self.runner.streams.followers
        ):
            self.loop.call_soon(self._take)

    def _take(self) -> None:
        d, self._armed = self._armed, None
        if d is not None:
            option = len(d.options) - 1
            if self._answer(d, option):
                self.kit_answered[d.id] = option

    # -- what happened -----------------------------------------------------------------

    def refusals(self) -> list[tuple[str, Ruling]]:
        """Returns the client's refused answers the scenario does not excuse."""
        return [
            (i, o)
            for i, o, _ in self.answers
            if not o.accepted
            and not (i in self.kit_answered and o.refusal is Refusal.ALREADY_ANSWERED)
        ]

    def slowest_ms(self) -> float:
        """Returns the longest the client took for an accepted answer (ms)."""
        waits = [
            (when - self.asked[i].asked) * 1000
            for i, when in self.accepted.items()
            if i in self.asked
        ]
        return max(waits, default=0.0)


class Client:
    """The client command for one seat, run as a subprocess in its own process group."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.process: asyncio.subprocess.Process | None = None
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES)
        # The first error line stays when the tail has moved on: it says why.
        self.first_error: str | None = None
        self.exited_at: float | None = None
        self.error: str | None = None
        self._readers: list[asyncio.Task[None]] = []

    async def start(self) -> bool:
        """Returns whether the process started (else ``error`` says why)."""
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as e:
            self.error = f"cannot run {self.argv[0]!r}: {e.strerror or e}"
            return False
        assert self.process.stdout is not None and self.process.stderr is not None
        self._readers = [
            asyncio.ensure_future(self._read(self.process.stdout, None)),
            asyncio.ensure_future(self._read(self.process.stderr, self.stderr)),
        ]
        return True

    async def _read(self, stream: asyncio.StreamReader, keep: deque[str] | None) -> None:
        while line := await stream.readline():
            if keep is not None:
                text = line.decode(errors="replace").rstrip()
                keep.append(text)
                if self.first_error is None and startup.is_error_line(text):
                    self.first_error = text

    async def wait(self) -> int:
        """Returns the exit code once the process has exited."""
        assert self.process is not None
        code = await self.process.wait()
        if self.exited_at is None:
            self.exited_at = time.monotonic()
        return code

    @property
    def code(self) -> int | None:
        """Returns the exit code, or None while it runs."""
        return None if self.process is None else self.process.returncode

    async def kill(self) -> None:
        """Kills the process group and waits for the process and its output."""
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.process.wait(), 5)
        await self.close()

    async def close(self) -> None:
        """Waits (briefly) for the output readers to end."""
        if self._readers:
            await asyncio.wait(self._readers, timeout=2)
            for task in self._readers:
                task.cancel()


def substitute(template: Sequence[str], server: str, token: str) -> list[str]:
    """Returns the command with ``{server}`` and ``{token}`` replaced in each argument."""
    return [a.replace("{server}", server).replace("{token}", token) for a in template]


class Kit:
    """Runs scenarios against one client command."""

    def __init__(
        self,
        template: Sequence[str],
        *,
        timeout: float = 60.0,
        progress: Progress = lambda line: None,
    ) -> None:
        self.template = list(template)
        self.timeout = timeout
        self.progress = progress
        self.arena: Arena | None = None
        self.address = ""

    async def run(self, names: Sequence[str] = SCENARIOS) -> list[Verdict]:
        """Returns the verdicts of the named scenarios, in ``SCENARIOS`` order."""
        wanted = [n for n in SCENARIOS if n in names]
        verdicts: list[Verdict] = []
        with tempfile.TemporaryDirectory(prefix="mammamia-conformance-") as tmp:
            arena, port = await create_server(
                "127.0.0.1:0",
                db_path=Path(tmp) / "conformance.db",
                organiser_key=new_organiser_key(),
                start_timeout=self.timeout,
            )
            self.arena = arena
            self.address = f"127.0.0.1:{port}"
            await arena.start()
            self.progress(f"server on {self.address}")
            try:
                for name in wanted:
                    if name == "end" and "turns" in wanted:
                        continue
                    got = await self._scenario(name)
                    verdicts.extend(v for v in got if v.name in wanted)
            finally:
                await arena.drain(grace=0)
        order = {n: i for i, n in enumerate(SCENARIOS)}
        return sorted(verdicts, key=lambda v: order[v.name])

    async def _scenario(self, name: str) -> list[Verdict]:
        started = time.monotonic()
        try:
            plan = self._plan(name)
        except positions.NotFound as e:
            return [Verdict(name, False, f"kit: {e}")]
        verdicts = await self._play(plan)
        for v in verdicts:
            v.seconds = time.monotonic() - started
            self.progress(f"{v.name}: {'pass' if v.passed else 'FAIL'}: {v.why}")
        return verdicts

    def _plan(self, name: str) -> Plan:
        if name in ("turns", "end"):
            return Plan("turns", seed=1)
        if name == "resume":
            return Plan(name, seed=3, proxy=True, cut=True)
        if name == "refused":
            return Plan(name, seed=2, proxy=True, refuse_first=True)
        if name == "deadline":
            return Plan(name, seed=4, deadline_ms=SHORT_DEADLINE_MS)
        where = positions.find(name)
        return Plan(
            name,
            seed=where.seed,
            seat=where.seat,
            game=where.game,
            played=where.played,
            target=name,
        )

    async def _play(self, plan: Plan) -> list[Verdict]:
        assert self.arena is not None
        runners = self.arena.runners
        runner = runners.create_match(
            PLAYERS,
            seed=plan.seed,
            deadline_ms=plan.deadline_ms,
            game=plan.game,
            played=plan.played,
            names=[KIT_NAME if s != plan.seat else "" for s in range(2)],
        )
        proxy = await Proxy(self.address).start() if plan.proxy else None
        session = Session(runner, plan, proxy)
        for s in range(PLAYERS):
            if s != plan.seat:
                runner.join(s, KIT_NAME)
        address = proxy.address if proxy is not None else self.address
        where = (
            "from the deal"
            if plan.game is None
            else f"at action {len(plan.played)} of seed {plan.seed}"
        )
        self.progress(
            f"{plan.name}: match {runner.id}, client seat {plan.seat}, {where}"
            + (f", through a proxy on {address}" if proxy else "")
        )
        client = Client(substitute(self.template, address, runner.tokens[plan.seat]))
        try:
            outcome = await self._watch(runner, session, client)
        finally:
            await client.kill()
            if proxy is not None:
                await proxy.close()
        if not runner.ended:
            runner.abort(f"conformance kit: {outcome or 'scenario over'}")
        try:
            result = await asyncio.wait_for(runner.result(), 30)
            meta: dict[str, Any] = json.loads(result.record).get("meta", {})
        except (TimeoutError, ValueError):
            meta = {}
        return Judge(plan, session, client, meta, outcome, self.timeout).verdicts()

    async def _watch(self, runner: Runner, session: Session, client: Client) -> str | None:
        """Returns None when the match ended with the client running (then waits for its
        exit), else what went wrong first."""
        if not await client.start():
            return client.error
        exit_task = asyncio.ensure_future(client.wait())
        end_task = asyncio.ensure_future(session.ended.wait())
        try:
            await asyncio.wait(
                {exit_task, end_task}, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if session.ended.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(exit_task), END_GRACE)
                return None
            if exit_task.done():
                return "exited"
            return "timeout"
        finally:
            end_task.cancel()
            if not exit_task.done():
                exit_task.cancel()


class Judge:
    """Turns what a session saw into verdicts: one line each."""

    def __init__(
        self,
        plan: Plan,
        session: Session,
        client: Client,
        meta: dict[str, Any],
        outcome: str | None,
        timeout: float,
    ) -> None:
        self.plan = plan
        self.s = session
        self.client = client
        self.meta = meta
        self.outcome = outcome
        self.timeout = timeout

    def verdicts(self) -> list[Verdict]:
        """Returns the scenario's verdicts (``turns`` also gives ``end``)."""
        failure = self.failure()
        tail = list(self.client.stderr)
        code = self.client.code
        mid = self.s.runner.id
        if failure is not None:
            main = Verdict(
                self.plan.name, False, failure, match_id=mid, exit_code=code, stderr_tail=tail
            )
        else:
            main = Verdict(self.plan.name, True, self.success(), match_id=mid, exit_code=code)
        verdicts = [main]
        if self.plan.name == "turns":
            end = self.end_failure()
            verdicts.append(
                Verdict(
                    "end",
                    end is None,
                    end or self.exit_text(),
                    match_id=mid,
                    exit_code=code,
                    stderr_tail=tail if end else [],
                )
            )
        return verdicts

    # -- the exit ---------------------------------------------------------------------

    def exit_text(self) -> str:
        """Returns how the client exited after the end (for a passing client)."""
        s, c = self.s, self.client
        assert s.ended_at is not None and c.exited_at is not None
        return f"exit code {c.code}, {c.exited_at - s.ended_at:.2f} s after match_ended"

    def end_failure(self) -> str | None:
        """Returns why the client's exit fails, or None."""
        s, c = self.s, self.client
        if c.error is not None:
            return c.error
        answered = len(s.accepted)
        if self.outcome == "exited":
            return (
                f"exited with code {c.code} before the match ended "
                f"(after {_count(answered, 'accepted answer')})"
            )
        if self.outcome == "timeout":
            return (
                f"neither the match nor the client ended in {self.timeout:g} s "
                f"({_count(answered, 'accepted answer')})"
            )
        if c.exited_at is None or s.ended_at is None:
            return f"still running {END_GRACE:g} s after match_ended (killed)"
        if c.code != 0:
            return f"exited with code {c.code} {c.exited_at - s.ended_at:.2f} s after match_ended"
        return None

    # -- the scenario -----------------------------------------------------------------

    def failure(self) -> str | None:
        """Returns why the scenario fails, or None when it passes."""
        s = self.s
        seat = self.plan.seat
        if self.client.error is not None:
            return self.client.error
        if not s.runner.match.joined[seat]:
            code = self.client.code
            how = f"exited with code {code}" if code is not None else "ran"
            why = startup.start_failure(self.client.argv, self.client.first_error)
            return f"the client {how} without taking its seat{why}"
        if self.plan.name == "resume" and s.cut_at is None:
            return (
                f"the client gave {_count(len(s.accepted), 'accepted answer')}, fewer than the "
                f"{CUT_AFTER} after which the kit cuts the connection" + self._exit_note()
            )
        target = self._target_failure()
        if target is not None:
            return target
        if self.plan.name == "resume":
            resumed = self._resume_failure()
            if resumed is not None:
                return resumed
        timeouts = [t for t in self.meta.get("timeouts", []) if t.get("seat") == seat]
        if timeouts:
            first = timeouts[0]
            return (
                f"the server applied the default to {len(timeouts)} of its decisions "
                f"(first {first.get('decision')}: {first.get('reason')}, "
                f"{self._asked_ms(str(first.get('decision')))})" + self._exit_note()
            )
        refusals = s.refusals()
        if refusals:
            i, o = refusals[0]
            return f"{_count(len(refusals), 'answer')} refused, first to {i}: {_short(o.message)}"
        autopilot = [a for a in self.meta.get("autopilot", []) if a.get("seat") == seat]
        if autopilot:
            return f"the seat went on autopilot ({autopilot[0].get('reason')})"
        return self.end_failure()

    def _exit_note(self) -> str:
        if self.outcome == "exited":
            return f"; it exited with code {self.client.code} before the end"
        if self.outcome == "timeout":
            return f"; no end in {self.timeout:g} s"
        return ""

    def _asked_ms(self, decision_id: str) -> str:
        d = self.s.asked.get(decision_id)
        if d is None:
            return "deadline"
        return f"deadline {round((d.deadline - d.asked) * 1000)} ms"

    def _first(self) -> Decision | None:
        return next(iter(self.s.asked.values()), None)

    def _target_failure(self) -> str | None:
        if self.plan.target is None:
            return None
        s = self.s
        d = self._first()
        if d is None or not d.resolve:
            return f"kit: the match did not start at a {self.plan.target} decision"
        if d.id not in s.accepted:
            own = [o for i, o, _ in s.answers if i == d.id]
            if own:
                return (
                    f"the answer to {self.plan.target} decision {d.id} was refused: "
                    f"{_short(own[0].message)}"
                )
            return (
                f"no answer to {self.plan.target} decision {d.id} before its default"
                + self._exit_note()
            )
        return None

    def _resume_failure(self) -> str | None:
        s = self.s
        assert s.proxy is not None
        if s.proxy.connections <= s.cut_connections:
            return (
                "the client did not reconnect after the kit cut its connection" + self._exit_note()
            )
        if s.open_at_cut is None:
            return (
                "the client reconnected, but no decision of its seat followed the cut"
                + self._exit_note()
            )
        if s.open_at_cut not in s.accepted:
            return (
                f"reconnected, but did not answer {s.open_at_cut} (open while it was "
                f"cut off) before its default" + self._exit_note()
            )
        return None

    def success(self) -> str:
        """Returns the one line of a passing scenario."""
        s = self.s
        n = len(s.accepted)
        slowest = f"slowest {s.slowest_ms():.0f} ms"
        tail = f"exited 0 {self._after_end():.2f} s after match_ended"
        name = self.plan.name
        if self.plan.target is not None:
            d = self._first()
            assert d is not None
            chosen = self._chosen(d)
            return (
                f"resolved {s.deciding[d.id]} with {chosen} "
                f"({len(d.options)} options) in {(s.accepted[d.id] - d.asked) * 1000:.0f} "
                f"ms; then {_count(n - 1, 'more answer')} in time; {tail}"
            )
        if name == "resume":
            assert s.open_at_cut is not None and s.cut_at is not None
            d = s.asked[s.open_at_cut]
            back = s.accepted[s.open_at_cut] - d.asked
            how = (
                "in the new stream's snapshot"
                if s.via_snapshot
                else "asked after the new stream opened"
            )
            return (
                f"reconnected after the cut and answered {d.id} ({how}) {back:.2f} s "
                f"after it was asked; {n} answers in time, no default; {tail}"
            )
        if name == "refused":
            if not s.kit_answered:
                return (
                    f"the client answered its first decision before the kit could; "
                    f"it played on ({n} answers); {tail}"
                )
            taken = next(iter(s.kit_answered))
            own = [o for i, o, _ in s.answers if i == taken]
            if not own:
                how = "the client sent no answer to it"
            elif own[0].repeated:
                how = "the client's answer was accepted as a repeat"
            else:
                how = f"the client's answer was refused ({_refusal(own[0])})"
            return f"the kit answered {taken}; {how}; it played on ({n} answers); {tail}"
        if name == "deadline":
            return (
                f"{n} answers within the {SHORT_DEADLINE_MS} ms deadline ({slowest}), "
                f"no default; {tail}"
            )
        return f"{n} answers, every one in time ({slowest}), none refused; {tail}"

    def _after_end(self) -> float:
        s, c = self.s, self.client
        assert s.ended_at is not None and c.exited_at is not None
        return c.exited_at - s.ended_at

    def _chosen(self, d: Decision) -> str:
        """Returns the client's answer to ``d``, as the match applied it."""
        at = len(self.plan.played)
        actions = self.s.runner.match.actions
        if at < len(actions):
            action = actions[at][1]
            index = d.options.index(action) if action in d.options else -1
            text = _resolve_text(action)
            return f"option {index} ({text})"
        return "an answer"


def _resolve_text(action: Action) -> str:
    if not isinstance(action, Resolve):
        return str(action)
    if not action.bake:
        return "decline"
    text = f"bake with {action.ingredient}" if action.ingredient else "bake"
    hand = action.hand_cards()
    if hand:
        text += ", adding " + ", ".join(f"{n} {k}" for k, n in hand.items()) + " from hand"
    return text


def _refusal(outcome: Ruling) -> str:
    return f"REFUSAL_{outcome.refusal.name}" if outcome.refusal is not None else "accepted"


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
