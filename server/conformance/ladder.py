"""The conformance kit's ladder scenarios: a client command that registers a name,
enters the ladder and plays the matches it is assigned, until it is stopped.

The kit runs a ladder host of its own in-process (``server.app.create_server`` on
127.0.0.1, a free port and a temporary SQLite file, with the ladder built as
``mammamia serve`` builds it: two-player matches, its lobby and scheduler, its
service), which the client reaches through the kit's TCP proxy (so that a restarted
host is found at the same address), and a second host (a plain server on a file of
its own) where the kit may run a ladder match instead, its seats naming that host
(``Assignment.host_address``). The kit's own bot is the client's opponent: it enters
the ladder in-process, takes its seat when assigned (``Runner.join``) and answers
each of its decisions at once with a seeded random option (``kit.Session``).

The command is run with ``{server}`` (the proxy's host:port), ``{name}`` (a name the
scenario chooses) and ``{key_file}`` (a path in the kit's temporary directory)
substituted. At a scenario's end the kit stops the client with SIGTERM, after which
it must exit with code 0 within ``STOP_GRACE`` seconds (but where the scenario says
otherwise). Each assigned match must be played to its end as a seat is in the
single-seat scenarios: joined, every decision answered before its default, none
refused.

- ``ladder-enter``: no key file yet: the client registers the name, writes the key
  to the key file (readable by its owner alone) and enters.
- ``ladder-matches``: three matches assigned one after another (the next once the
  last has ended); on one ``Seat.PlayMatches`` call (a ``sit`` each) or on
  ``Join`` and ``Play`` calls of their own, either will do.
- ``ladder-replaced``: a second client with the same name and key file enters; the
  first one's Enter stream ends with ALREADY_EXISTS: it must exit within
  ``REPLACED_GRACE`` seconds (any code) without entering again, and the newer one
  plays the next match.
- ``ladder-host``: the match runs on the kit's second host: the client must play it
  there (``Assignment.host_address``).
- ``ladder-key``: the key file holds a wrong key: ``Ladder.Enter`` is refused with
  PERMISSION_DENIED, and the client must exit with a non-zero code within
  ``KEY_GRACE`` seconds, having called Enter at most ``KEY_TRIES`` times.
- ``ladder-drain``: after one match the ladder host drains (its Enter streams end,
  later calls fail with UNAVAILABLE until it is back) and restarts on the same
  database: the client must enter again within ``BACK_WITHIN`` seconds and play the
  next match.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from mammamia.fairness import DealSet
from mammamia_pb import arena_pb2_grpc as pb_grpc

from ..app import Arena, create_server
from ..db.ladder.rows import DEFAULT_VERSION
from ..db.ladder.store import LadderStore
from ..ladder.ladder import Ladder
from ..ladder.lobby import Assignment, Entrant, Entries, LocalLobby
from ..ladder.matches import MatchEnd, Matches, ServerMatches
from ..ladder.scheduler import Policy
from ..ladder.service import LadderServicer
from ..runner import Runner
from ..runners import Runners
from ..tokens import new_organiser_key
from . import startup
from .kit import STDERR_LINES, Client, Plan, Session, Verdict, _count, _short
from .proxy import Proxy

SCENARIOS: Final = (
    "ladder-enter",
    "ladder-matches",
    "ladder-replaced",
    "ladder-host",
    "ladder-key",
    "ladder-drain",
)
"""Every ladder scenario, in the order the kit runs and prints them."""

STOP_GRACE: Final = 5.0
"""Seconds the client has to exit 0 once the kit has sent it SIGTERM."""

REPLACED_GRACE: Final = 10.0
"""Seconds the older client has to exit once a newer entry replaced its own."""

KEY_GRACE: Final = 10.0
"""Seconds a client whose key is refused has to exit (from its start)."""

KEY_TRIES: Final = 3
"""Enter calls a client whose key is refused may make, at most."""

BACK_WITHIN: Final = 20.0
"""Seconds a client has to enter again once the drained host is back."""

MATCHES: Final = 3
"""Matches the ``ladder-matches`` scenario assigns."""

ASSIGN_WITHIN: Final = 10.0
"""Seconds the kit waits for a match once its bot has entered beside the client."""

KIT_BOT: Final = "conformance-kit"
PLAYERS: Final = 2
POLL: Final = 0.05


def substitute(template: Sequence[str], server: str, name: str, key_file: str) -> list[str]:
    """Returns the command with ``{server}``, ``{name}`` and ``{key_file}`` replaced in
    each argument."""
    return [
        a.replace("{server}", server).replace("{name}", name).replace("{key_file}", key_file)
        for a in template
    ]


class Failed(Exception):
    """A scenario failed: the message is its verdict's one line; ``client`` is the
    client whose stderr tells why (None: the last one started)."""

    def __init__(self, message: str, client: Client | None = None) -> None:
        super().__init__(message)
        self.client = client


class KitLadder(Ladder):
    """The ladder, counting each bot's Register and Enter calls (refused or not)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.registers: Counter[str] = Counter()
        self.enters: Counter[str] = Counter()
        self.entered: Counter[str] = Counter()  # the Enter calls accepted

    async def register(self, name: str) -> str:
        """Returns the new key (as :meth:`Ladder.register`), counting the call."""
        self.registers[name] += 1
        return await super().register(name)

    async def enter(self, name: str, key: str, version: str = DEFAULT_VERSION) -> Entrant:
        """Returns the entrant (as :meth:`Ladder.enter`), counting the call."""
        self.enters[name] += 1
        entrant = await super().enter(name, key, version)
        self.entered[name] += 1
        return entrant


class ElsewhereEntries(Entries):
    """The lobby's entries, telling the seats of a match the kit runs on its second
    host with that host's address (as a ladder of many hosts tells them)."""

    def __init__(self, elsewhere: dict[str, str]) -> None:
        super().__init__()
        self._elsewhere = elsewhere  # match id -> the address of the host that runs it

    def tell(self, name: str, assignment: Assignment) -> None:
        """Sends ``assignment`` (see :meth:`Entries.tell`), naming the host that runs it."""
        address = self._elsewhere.get(assignment.match_id)
        if address is not None:
            assignment = dataclasses.replace(assignment, host_address=address)
        super().tell(name, assignment)


@dataclasses.dataclass(slots=True)
class Watched:
    """A ladder match the client has a seat in, seen through the runner's hooks."""

    runner: Runner
    seat: int
    session: Session
    elsewhere: bool
    meta: dict[str, Any] | None = None  # the record's meta, once stored


class KitMatches:
    """The ladder's matches: created on the ladder host (or, while ``elsewhere`` is
    set, on the second host), each watched from its creation."""

    def __init__(self, here: Runners, there: Runners, there_address: str, client: str) -> None:
        self.here = ServerMatches(here)
        self.there = ServerMatches(there)
        self.there_address = there_address
        self.client = client  # the name whose seats are watched
        self.elsewhere = False
        self.routed: dict[str, str] = {}  # match id -> the second host's address
        self.watched: list[Watched] = []

    def _of(self, match_id: str) -> ServerMatches:
        return self.there if match_id in self.routed else self.here

    async def create(
        self,
        names: Sequence[str],
        deal_set: tuple[DealSet, str] | None = None,
        *,
        match_id: str | None = None,
        tokens: Sequence[str] | None = None,
    ) -> tuple[str, list[str], str]:
        """Returns (match id, seat tokens, commitment) of a new match (see
        :meth:`ServerMatches.create`)."""
        elsewhere = self.elsewhere
        matches = self.there if elsewhere else self.here
        created = await matches.create(names, deal_set, match_id=match_id, tokens=tokens)
        if elsewhere:
            self.routed[created[0]] = self.there_address
        runner = matches.runners.get(created[0])
        if runner is not None and self.client in names:
            seat = list(names).index(self.client)
            plan = Plan(f"ladder:{created[0]}", seed=len(self.watched), seat=seat)
            self.watched.append(Watched(runner, seat, Session(runner, plan, None), elsewhere))
        return created

    async def result(self, match_id: str) -> MatchEnd:
        """Returns how the match ended (see :meth:`ServerMatches.result`)."""
        return await self._of(match_id).result(match_id)

    def stored_result(self, match_id: str) -> MatchEnd | None:
        """Returns the stored end (see :meth:`ServerMatches.stored_result`)."""
        return self._of(match_id).stored_result(match_id)

    def record(self, match_id: str) -> str | None:
        """Returns the stored record (see :meth:`ServerMatches.record`)."""
        return self._of(match_id).record(match_id)

    def notes(self, match_id: str) -> Sequence[Any]:
        """Returns the seats' notes (see :meth:`ServerMatches.notes`)."""
        return self._of(match_id).notes(match_id)

    def commitment(self, match_id: str) -> str:
        """Returns the match's commitment (see :meth:`ServerMatches.commitment`)."""
        return self._of(match_id).commitment(match_id)


_matches_protocol: type[Matches] = KitMatches  # KitMatches is the ladder's Matches


class Host:
    """The kit's ladder host: a server with the ladder, on a database file that
    outlives a restart."""

    def __init__(self, arena: Arena, port: int, ladder: KitLadder, matches: KitMatches) -> None:
        self.arena = arena
        self.address = f"127.0.0.1:{port}"
        self.ladder = ladder
        self.matches = matches


async def start_host(db: Path, there: Arena, there_address: str, timeout: float) -> Host:
    """Returns a started ladder host on ``db``, whose matches may run on ``there``."""
    arena, port = await create_server(
        "127.0.0.1:0",
        db_path=db,
        organiser_key=new_organiser_key(),
        start_timeout=timeout,
    )
    matches = KitMatches(arena.runners, there.runners, there_address, "")
    store = LadderStore(arena.storage.path)
    ladder = KitLadder(
        store,
        matches,
        Policy(PLAYERS, PLAYERS),
        settle=POLL,
        host_id=arena.storage.host_id,
        advertise=lambda: arena.advertise,
        runners=arena.runners,
    )
    lobby = ladder.lobby
    assert isinstance(lobby, LocalLobby)
    lobby.entries = ElsewhereEntries(matches.routed)
    ladder.recover(resumed=set(arena.runners.matches))
    servicer = LadderServicer(ladder)
    arena.add_service(
        "mammamia.v1.Ladder", lambda server: pb_grpc.add_LadderServicer_to_server(servicer, server)
    )
    arena.add_task(ladder.run)
    arena.on_drained(ladder.settled)
    await arena.start()
    return Host(arena, port, ladder, matches)


class Opponent:
    """The kit's bot on the ladder: enters in-process, takes each seat it is assigned
    (its decisions are answered by the match's ``Session``), and leaves after
    ``matches`` assignments."""

    def __init__(self, host: Host, there: Runners, name: str, matches: int) -> None:
        self.host = host
        self.there = there
        self.name = name
        self.matches = matches
        self.assigned = 0
        self._task: asyncio.Task[None] | None = None

    async def enter(self) -> None:
        """Registers (the first time) and enters the kit's bot."""
        ladder = self.host.ladder
        key = await ladder.register(self.name)
        entrant = await ladder.enter(self.name, key)
        self._task = asyncio.ensure_future(self._play(entrant))

    async def _play(self, entrant: Entrant) -> None:
        try:
            async for item in entrant:
                if not isinstance(item, Assignment):
                    continue
                found = self.host.arena.runners.seat_of(item.seat_token) or self.there.seat_of(
                    item.seat_token
                )
                if found is not None:
                    runner, seat = found
                    runner.join(seat, self.name)
                self.assigned += 1
                if self.assigned >= self.matches:
                    break
        finally:
            entrant.close()

    async def close(self) -> None:
        """Leaves the ladder (if still entered)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


class LadderKit:
    """Runs the ladder scenarios against one client command."""

    def __init__(
        self,
        template: Sequence[str],
        *,
        timeout: float = 60.0,
        progress: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.template = list(template)
        self.timeout = timeout
        self.progress = progress
        self.tmp = Path()
        self.host: Host | None = None
        self.there: Arena | None = None
        self.there_address = ""
        self.proxy: Proxy | None = None
        self.clients: list[Client] = []
        self._opponents = 0
        self.stage = ""  # what the kit waits for now: said when the scenario times out

    async def run(self, names: Sequence[str] = SCENARIOS) -> list[Verdict]:
        """Returns the verdicts of the named scenarios, in ``SCENARIOS`` order."""
        wanted = [n for n in SCENARIOS if n in names]
        verdicts: list[Verdict] = []
        with tempfile.TemporaryDirectory(prefix="mammamia-conformance-ladder-") as tmp:
            self.tmp = Path(tmp)
            there, port = await create_server(
                "127.0.0.1:0",
                db_path=self.tmp / "other-host.db",
                organiser_key=new_organiser_key(),
                start_timeout=self.timeout,
            )
            await there.start()
            self.there, self.there_address = there, f"127.0.0.1:{port}"
            try:
                self.host = await start_host(
                    self.tmp / "ladder.db", there, self.there_address, self.timeout
                )
                self.proxy = await Proxy(self.host.address).start()
                self.progress(
                    f"ladder host on {self.host.address} (the client's {self.proxy.address}), "
                    f"a second host on {self.there_address}"
                )
                for name in wanted:
                    verdicts.append(await self._scenario(name))
            finally:
                if self.proxy is not None:
                    await self.proxy.close()
                if self.host is not None:
                    await self.host.arena.drain(grace=0)
                await there.drain(grace=0)
        return verdicts

    # -- running one scenario ----------------------------------------------------------

    async def _scenario(self, name: str) -> Verdict:
        started = time.monotonic()
        self.clients = []
        self.stage = "the client's start"
        scenario = getattr(self, "_" + name.replace("-", "_"))
        blamed: Client | None = None
        try:
            why = await asyncio.wait_for(scenario(name), self.timeout)
            verdict = Verdict(name, True, why)
        except Failed as e:
            verdict = Verdict(name, False, str(e))
            blamed = e.client
        except TimeoutError:
            verdict = Verdict(
                name, False, f"not over in {self.timeout:g} s (--timeout), waiting for {self.stage}"
            )
        finally:
            for client in self.clients:
                await client.kill()
        if not verdict.passed:
            failing = blamed or (self.clients[-1] if self.clients else None)
            if failing is not None:
                verdict.stderr_tail = list(failing.stderr)[-STDERR_LINES:]
        if self.clients:
            verdict.exit_code = self.clients[-1].code
        verdict.seconds = time.monotonic() - started
        self.progress(f"{name}: {'pass' if verdict.passed else 'FAIL'}: {verdict.why}")
        return verdict

    def _client_name(self, scenario: str) -> str:
        return f"client-{scenario}"

    async def _start(self, name: str, key_file: Path) -> Client:
        assert self.proxy is not None
        client = Client(substitute(self.template, self.proxy.address, name, str(key_file)))
        self.clients.append(client)
        if not await client.start():
            raise Failed(client.error or "the client did not start")
        return client

    async def _entered(self, client: Client, name: str, times: int = 1) -> float:
        """Returns the seconds until ``name`` had ``times`` accepted Enter calls; raises
        Failed when the client exits first."""
        assert self.host is not None
        started = time.monotonic()
        ladder = self.host.ladder
        self.stage = f"the client to enter the ladder as {name!r} ({self._calls(name)} so far)"
        while ladder.entered[name] < times:
            if client.code is not None:
                await client.close()
                why = startup.start_failure(client.argv, client.first_error)
                raise Failed(
                    f"the client exited with code {client.code} before it entered the ladder "
                    f"({self._calls(name)}){why}",
                    client,
                )
            await asyncio.sleep(POLL)
        return time.monotonic() - started

    def _calls(self, name: str) -> str:
        assert self.host is not None
        ladder = self.host.ladder
        return (
            f"{_count(ladder.registers[name], 'Register call')}, "
            f"{_count(ladder.enters[name], 'Enter call')}"
        )

    async def _play(self, client: Client, name: str, matches: int = 1) -> list[Watched]:
        """Returns the client's matches once the kit's bot has played ``matches`` with it,
        each judged; raises Failed naming the first that fails."""
        assert self.host is not None
        self._opponents += 1
        watching = self.host.matches
        watching.client = name
        first = len(watching.watched)
        played: list[Watched] = []
        for index in range(matches):
            # One match at a time: a bot of the kit's enters for one, then leaves.
            opponent = Opponent(
                self.host, self._there_runners(), f"{KIT_BOT}-{self._opponents}-{index}", 1
            )
            try:
                await opponent.enter()
                since = time.monotonic()
                nth = _ordinal(index + 1)
                self.stage = f"the client's {nth} match to be formed"
                while len(watching.watched) <= first + index:
                    if client.code is not None:
                        raise Failed(
                            f"the client exited with code {client.code} before its "
                            f"{nth} match was assigned"
                        )
                    if time.monotonic() - since > ASSIGN_WITHIN:
                        entered = self.host.ladder.lobby.has_entered(name)
                        raise Failed(
                            f"no {nth} match in {ASSIGN_WITHIN:g} s: the client "
                            + ("is entered but was not seated" if entered else "is not entered")
                            + f" ({self._calls(name)})"
                        )
                    await asyncio.sleep(POLL)
                watched = watching.watched[first + index]
                await self._judge(client, watched, index + 1)
                played.append(watched)
            finally:
                await opponent.close()
        return played

    def _there_runners(self) -> Runners:
        assert self.there is not None
        return self.there.runners

    async def _judge(self, client: Client, w: Watched, nth: int) -> None:
        """Returns once the match has ended and been stored; raises Failed when the
        client did not play it to its end in time."""
        s = w.session
        where = f" on the second host ({self.there_address})" if w.elsewhere else ""
        what = f"its {_ordinal(nth)} assigned match {w.runner.id}{where}"
        self.stage = f"the end of {what}"
        while not s.ended.is_set():
            if client.code is not None:
                raise Failed(
                    f"the client exited with code {client.code} during {what} "
                    f"({_count(len(s.accepted), 'accepted answer')})"
                )
            await asyncio.sleep(POLL)
        result = await asyncio.wait_for(w.runner.result(), 30)
        try:
            w.meta = json.loads(result.record).get("meta", {})
        except ValueError:
            w.meta = {}
        meta = w.meta or {}
        seat = w.seat
        if not w.runner.match.joined[seat]:
            hint = f" (Assignment.host_address named {self.there_address})" if w.elsewhere else ""
            raise Failed(f"the client did not take its seat in {what}{hint}")
        timeouts = [t for t in meta.get("timeouts", []) if t.get("seat") == seat]
        if timeouts:
            raise Failed(
                f"the server applied the default to {len(timeouts)} of the client's "
                f"decisions in {what} (first {timeouts[0].get('decision')}: "
                f"{timeouts[0].get('reason')})"
            )
        refusals = s.refusals()
        if refusals:
            i, o = refusals[0]
            raise Failed(
                f"{_count(len(refusals), 'answer')} refused in {what}, first to {i}: "
                f"{_short(o.message)}"
            )
        autopilot = [a for a in meta.get("autopilot", []) if a.get("seat") == seat]
        if autopilot:
            raise Failed(f"the seat went on autopilot in {what} ({autopilot[0].get('reason')})")
        if result.status != "finished":
            raise Failed(f"{what} ended {result.status}")

    async def _stop(self, client: Client) -> str:
        """Returns how the client exited after SIGTERM; raises Failed when it did not
        exit with code 0 within ``STOP_GRACE`` seconds."""
        if client.code is not None:
            raise Failed(f"the client exited with code {client.code} before it was stopped")
        assert client.process is not None
        self.stage = "the client's exit after SIGTERM"
        sent = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(client.process.pid, signal.SIGTERM)
        try:
            code = await asyncio.wait_for(client.wait(), STOP_GRACE)
        except TimeoutError:
            raise Failed(f"still running {STOP_GRACE:g} s after SIGTERM (killed)") from None
        took = time.monotonic() - sent
        if code == -signal.SIGTERM:
            raise Failed("killed by SIGTERM: the client must catch it, leave the ladder and exit 0")
        if code != 0:
            raise Failed(f"exited with code {code} {took:.2f} s after SIGTERM (0 expected)")
        return f"exited 0 {took:.2f} s after SIGTERM"

    # -- the scenarios -----------------------------------------------------------------

    async def _ladder_enter(self, scenario: str) -> str:
        assert self.host is not None
        name = self._client_name(scenario)
        key_file = self.tmp / f"{scenario}.key"
        client = await self._start(name, key_file)
        took = await self._entered(client, name)
        if self.host.ladder.registers[name] == 0:
            raise Failed("the client entered without registering the name")
        kept = self._key_file(key_file, name)
        stopped = await self._stop(client)
        return (
            f"registered {name!r}, wrote its key ({kept}) and entered {took:.2f} s "
            f"after start; {stopped}"
        )

    def _key_file(self, path: Path, name: str) -> str:
        """Returns how the key file is kept; raises Failed when it is missing, readable
        by others, or does not hold the name's key."""
        try:
            mode = path.stat().st_mode & 0o777
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise Failed(
                f"registered and entered, but the key file {str(path)!r} cannot be read: "
                f"{e.strerror or e}"
            ) from None
        if mode & 0o077:
            raise Failed(
                f"the key file is readable or writable by others (mode {mode:04o}; 0600 expected)"
            )
        assert self.host is not None
        if not self.host.ladder.store.check_key(name, text.strip()):
            raise Failed(
                f"the key file does not hold the key Register returned ({len(text)} characters)"
            )
        return f"mode {mode:04o}"

    async def _ladder_matches(self, scenario: str) -> str:
        name = self._client_name(scenario)
        client = await self._start(name, self.tmp / f"{scenario}.key")
        await self._entered(client, name)
        played = await self._play(client, name, MATCHES)
        stopped = await self._stop(client)
        return (
            f"played {len(played)} assigned matches one after another to their end, "
            f"{_answers(played)}; {stopped}"
        )

    async def _ladder_replaced(self, scenario: str) -> str:
        assert self.host is not None
        ladder = self.host.ladder
        name = self._client_name(scenario)
        key_file = self.tmp / f"{scenario}.key"
        older = await self._start(name, key_file)
        await self._entered(older, name)
        newer = await self._start(name, key_file)
        await self._entered(newer, name, times=2)
        replaced = time.monotonic()
        self.stage = "the older client's exit once its entry was replaced"
        try:
            await asyncio.wait_for(older.wait(), REPLACED_GRACE)
        except TimeoutError:
            raise Failed(
                f"the older client was still running {REPLACED_GRACE:g} s after a newer entry "
                f"of its name replaced its own (ALREADY_EXISTS; {self._calls(name)})",
                older,
            ) from None
        gone = time.monotonic() - replaced
        if ladder.enters[name] > 2:
            raise Failed(
                f"the older client entered again after its entry was replaced "
                f"({self._calls(name)}): two copies would take the name from each other in turn",
                older,
            )
        if ladder.registers[name] > 1:
            raise Failed(
                f"the newer client registered the name again although the key file held its "
                f"key ({self._calls(name)})",
                newer,
            )
        if newer.code is not None:
            raise Failed(f"the newer client exited with code {newer.code} too", newer)
        played = await self._play(newer, name, 1)
        if ladder.enters[name] > 2:
            raise Failed(f"an entry of the name was made again ({self._calls(name)})", older)
        stopped = await self._stop(newer)
        return (
            f"the older client exited with code {older.code} {gone:.2f} s after its entry was "
            f"replaced, without entering again; the newer one played the next match "
            f"({_answers(played)}); {stopped}"
        )

    async def _ladder_host(self, scenario: str) -> str:
        assert self.host is not None
        name = self._client_name(scenario)
        client = await self._start(name, self.tmp / f"{scenario}.key")
        await self._entered(client, name)
        self.host.matches.elsewhere = True
        try:
            played = await self._play(client, name, 1)
        finally:
            self.host.matches.elsewhere = False
        stopped = await self._stop(client)
        return (
            f"played the match Assignment.host_address placed on the second host "
            f"({self.there_address}), {_answers(played)}; {stopped}"
        )

    async def _ladder_key(self, scenario: str) -> str:
        assert self.host is not None
        ladder = self.host.ladder
        name = self._client_name(scenario)
        key_file = self.tmp / f"{scenario}.key"
        right = await ladder.register(name)
        ladder.registers[name] -= 1  # the kit's own
        key_file.write_text(f"{'0' if right[0] != '0' else '1'}{right[1:]}\n", encoding="utf-8")
        key_file.chmod(0o600)
        client = await self._start(name, key_file)
        started = time.monotonic()
        self.stage = f"the client's exit with its key refused ({self._calls(name)} so far)"
        try:
            code = await asyncio.wait_for(client.wait(), KEY_GRACE)
        except TimeoutError:
            raise Failed(
                f"still running {KEY_GRACE:g} s after start with a key the server refuses "
                f"({self._calls(name)}; each Enter refused with PERMISSION_DENIED)"
            ) from None
        took = time.monotonic() - started
        if ladder.enters[name] == 0:
            raise Failed(
                f"exited with code {code} without calling Ladder.Enter with the key file's "
                f"key ({self._calls(name)})"
            )
        if code == 0:
            raise Failed(
                f"exited with code 0 after its key was refused ({self._calls(name)}): a refused "
                f"key must end the client with a non-zero code"
            )
        if ladder.enters[name] > KEY_TRIES:
            raise Failed(
                f"called Ladder.Enter {ladder.enters[name]} times with a refused key (at most "
                f"{KEY_TRIES}: PERMISSION_DENIED is not retried)"
            )
        if ladder.registers[name]:
            raise Failed(
                f"called Ladder.Register although the key file held a key ({self._calls(name)})"
            )
        return (
            f"exited with code {code} {took:.2f} s after start, after "
            f"{_count(ladder.enters[name], 'Enter call')} refused with PERMISSION_DENIED"
        )

    async def _ladder_drain(self, scenario: str) -> str:
        assert self.host is not None and self.there is not None and self.proxy is not None
        name = self._client_name(scenario)
        client = await self._start(name, self.tmp / f"{scenario}.key")
        await self._entered(client, name)
        before = await self._play(client, name, 1)
        self.stage = "the ladder host's drain"
        db = self.host.arena.storage.path
        drained = time.monotonic()
        await self.host.arena.drain(grace=0)
        self.host = await start_host(Path(db), self.there, self.there_address, self.timeout)
        self.proxy.retarget(self.host.address)
        down = time.monotonic() - drained
        self.progress(f"{scenario}: the ladder host drained and is back on {self.host.address}")
        self.stage = f"the client to enter again within {BACK_WITHIN:g} s"
        try:
            back = await asyncio.wait_for(self._entered(client, name), BACK_WITHIN)
        except TimeoutError:
            raise Failed(
                f"did not enter the ladder again within {BACK_WITHIN:g} s of the drained host's "
                f"return ({self._calls(name)} since)"
            ) from None
        after = await self._play(client, name, 1)
        stopped = await self._stop(client)
        return (
            f"played a match; the host drained and was back {down:.2f} s later; the client "
            f"entered again {back:.2f} s after that and played the next match "
            f"({_answers(before + after)}); {stopped}"
        )


def _answers(played: Sequence[Watched]) -> str:
    answers = sum(len(w.session.accepted) for w in played)
    slowest = max((w.session.slowest_ms() for w in played), default=0.0)
    return f"{_count(answers, 'answer')} in time, slowest {slowest:.0f} ms, none refused"


def _ordinal(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")
