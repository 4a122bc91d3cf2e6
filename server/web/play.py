"""A person's seat in the web page: a WebSocket to one seat of a match the server runs.

    GET /api/play   (WebSocket)

The seat is an ordinary seat of a match of the core's ``Runners``: it has the
match's deadlines and time bank, the default applies when it times out, and a page
that reloads (or whose connection drops) takes the same seat again with its seat
token, from the last event it saw. Matches with a person are unrated (``ladder``
False): the bots' ladder never sees them.

Every message to the browser is built from what ``server.visibility`` gives that
seat (``visibility.snapshot``, ``visibility.final``), through the JSON of the live
view (``server.web.live``) plus the seat's own cards: nothing else of the match is
read, so nothing the seat may not know reaches the page (R-VIEW-*).

The opponents are built-in bots the server plays in-process, or bots entered in the
ladder, asked for by name. A built-in bot follows its own seat's stream, exactly as
a remote bot's stream is filtered, and answers from the options of its own
decision. An entered bot is lent by the ladder (``Ladder.lend``): taken out of the
ladder's tables for the match, told its seat through its ordinary entry, and
waiting again once the match has ended; the match stays unrated. The messages are
described in docs/web.md.

With a people's table (``mammamia serve --people-table``, ``server.web.people``), a
person who gives a name may play a game for it: its result is stored for the
people's table when it finishes, and it offers no hints.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import structlog
from aiohttp import WSMsgType, web

from mammamia import View
from mammamia.actions import Action, Resolve, Turn

from .. import visibility
from ..db.ladder.rows import LadderError
from ..db.people import BUILTIN, LADDER, PERSON, PeopleResult, PeopleStore
from ..db.writer import Writer
from ..events import Decision
from ..ladder.lobby import Loan, StartedMatch
from ..quoting import quoted
from ..runner import Runner
from ..runners import Draining, Runners
from ..status import MatchStatus
from ..streams import Batch, Follower
from .live import HISTORY_LIMIT, entry_json, view_json

if TYPE_CHECKING:
    from ..ladder.ladder import Ladder

log = structlog.get_logger()

PLAYERS: Final = (2, 3, 4, 5)
"""Seats a person's match may have."""
DEADLINE_MS: Final = 60_000
"""A person's deadline per decision, unless the start message asks for another."""
TIME_BANK_MS: Final = 120_000
"""A person's time bank for the whole match, unless the start message asks for another."""
MAX_GAMES: Final = 32
"""Matches with a person running at once at most, all clients together."""
MAX_GAMES_PER_CLIENT: Final = 4
"""Matches with a person one client address may have running at once."""
MAX_LADDER_GAMES: Final = 4
"""Matches with a person and ladder bots running at once at most, all clients
together: the bots lent to them are the ladder's, which waits for them."""
BOT_PAUSE: Final = 0.15
"""Seconds a built-in bot waits before it answers, so that a person can follow."""
PACE: Final = 0.05
"""Seconds between two messages to the page, at least."""
START_TIMEOUT: Final = 10.0
"""Seconds a match with a ladder bot waits for its seats to be taken before it starts
(a seat not taken is played by the default policy, as in a ladder match)."""

Policy = Callable[[Decision, random.Random], int]
"""A built-in bot: the index of the option it takes of its own decision."""


def _random(decision: Decision, rng: random.Random) -> int:
    """Returns any option, all alike."""
    return rng.randrange(len(decision.options))


def _eager(decision: Decision, rng: random.Random) -> int:
    """Returns the option that plays the most cards (bakes when it may), ties at random."""

    def weight(action: Action) -> float:
        if isinstance(action, Resolve):
            return (10.0 if action.bake else 0.0) + rng.random()
        if isinstance(action, Turn):
            return action.count + (2 if action.order else 0) + rng.random()
        return rng.random()

    return max(range(len(decision.options)), key=lambda i: weight(decision.options[i]))


BOTS: Final[dict[str, Policy]] = {"random": _random, "eager": _eager}
"""The built-in bots a person may play against, by name."""


class Refused(Exception):
    """A start or resume the server will not do; its message is shown to the person."""


def action_json(action: Action) -> dict[str, Any]:
    """Returns an answer on offer as JSON: a turn or a resolution, and its words."""
    if isinstance(action, Turn):
        return {
            "kind": "turn",
            "ingredient": action.ingredient,
            "count": action.count,
            "order": action.order,
            "draw": action.draw,
            "text": str(action),
        }
    if isinstance(action, Resolve):
        return {
            "kind": "resolve",
            "bake": action.bake,
            "ingredient": action.ingredient,
            "hand": list(action.hand) if action.hand is not None else None,
            "text": _resolve_text(action),
        }
    return {"kind": "other", "text": str(action)}


def _resolve_text(action: Resolve) -> str:
    if not action.bake:
        return "decline"
    text = "bake"
    if action.ingredient:
        text += f" as {action.ingredient}"
    added = action.hand_cards()
    if added:
        text += " with " + ", ".join(f"{n} {kind}" for kind, n in added.items()) + " from hand"
    return text


def seat_view_json(view: View, facts: tuple[tuple[str, int, bool], ...]) -> dict[str, Any]:
    """Returns a seat's view as JSON: the spectator's JSON (``live.view_json``) with the
    seat's number and its own cards (hand, orders in hand, waiter), nothing more."""
    out = view_json(view, facts)
    out["seat"] = view.seat
    out["hand"] = list(view.hand)
    out["hand_orders"] = list(view.hand_orders)
    out["waiter_cards"] = list(view.waiter)
    return out


def decision_json(runner: Runner, decision: Decision) -> dict[str, Any]:
    """Returns the seat's open decision: its id, its options, its deadline and the
    time the default applies (UNIX seconds; the deadline plus the bank left)."""
    return {
        "id": decision.id,
        "resolve": decision.resolve,
        "options": [action_json(a) for a in decision.options],
        "deadline": decision.deadline,
        "default_at": runner.match.default_at(decision),
    }


def message(
    runner: Runner, seat: int, after: int, counted: bool = False
) -> tuple[dict[str, Any], int]:
    """Returns the page's message for ``seat`` now: its view, the public entries after
    sequence ``after``, its open decision, its time bank, whether the match counts on
    the people's table (``counted``) and offers hints, and the end once there is one;
    and the sequence the message reaches."""
    match = runner.match
    snap = visibility.snapshot(match, seat, after)
    facts = match.seat_facts()
    out: dict[str, Any] = {
        "type": "seat",
        "match": runner.id,
        "seat": seat,
        "status": snap.status,
        "sequence": snap.sequence,
        "view": seat_view_json(snap.view, facts),
        "events": [entry_json(e) for e in snap.history[-HISTORY_LIMIT:]],
        "decision": None if snap.decision is None else decision_json(runner, snap.decision),
        "time_bank": match.time_bank[seat],
        "now": runner.clock.now(),
        "table": counted,
        "hints": not (counted or match.settings.ladder),
        "final": None,
    }
    if match.ended is not None:
        final = visibility.final(match, match.ended, seat)
        out["status"] = final.ended.status
        out["view"] = seat_view_json(final.view, facts)
        out["decision"] = None
        out["final"] = {
            "status": final.ended.status,
            "winners": list(final.ended.winners),
            "delivered": list(final.ended.delivered),
            "ranks": list(final.ended.ranks),
            "reason": final.ended.reason,
            "replay": f"#/replay/{runner.id}",
        }
    return out, snap.sequence


class Tables:
    """The matches with a person this server runs: their opponents' tasks, and the
    ladder whose entered bots may be asked for by name (None: built-in bots only)."""

    def __init__(
        self, runners: Runners, ladder: Ladder | None = None, people: PeopleStore | None = None
    ) -> None:
        self.runners = runners
        self.ladder = ladder
        #: The people's table's results, written on a thread of their own (None: the
        #: server keeps no people's table).
        self.people = people
        self.writer = Writer("people-writer") if people is not None else None
        #: The running matches played for the people's table: their seats (kind, name).
        self.counted: dict[str, tuple[tuple[str, str], ...]] = {}
        self.lending: set[str] = set()  # the running matches with ladder bots
        self.tasks: set[asyncio.Task[None]] = set()
        self.running: set[str] = set()
        self.clients: dict[str, int] = {}  # client address -> its matches running

    def start(self, request: dict[str, Any], client: str = "?") -> tuple[Runner, int]:
        """Returns a new match's runner and the person's seat (0); the opponents named
        in ``request["opponents"]`` take the other seats, in order: each a built-in
        bot's name, or ``{"ladder": NAME}`` for a bot entered in the ladder. Raises
        Refused for a start the server will not make (an entered bot that is not
        entered now, or is playing a match, among them)."""
        players = request.get("players")
        if not isinstance(players, int) or players not in PLAYERS:
            raise Refused(f"players must be one of {', '.join(map(str, PLAYERS))}")
        opponents = request.get("opponents") or ["random"] * (players - 1)
        if not isinstance(opponents, list) or len(opponents) != players - 1:
            raise Refused(f"a match of {players} players has {players - 1} opponents")
        entered = _entered(opponents)
        if len(self.running) >= MAX_GAMES:
            raise Refused("too many games with a person are being played; try again later")
        if self.clients.get(client, 0) >= MAX_GAMES_PER_CLIENT:
            raise Refused(f"at most {MAX_GAMES_PER_CLIENT} games at once; finish one first")
        deadline_ms = _whole(request.get("deadline_ms"), DEADLINE_MS, 500, 600_000)
        bank_ms = _whole(request.get("time_bank_ms"), TIME_BANK_MS, 0, 3_600_000)
        person = str(request.get("name") or "").strip()[:40]
        counted = request.get("table") is True
        if counted and self.people is None:
            raise Refused("this server keeps no people's table: play unrated")
        if counted and not person:
            raise Refused("a game for the people's table needs your name")
        person = person or "you"
        names = [person] + [
            f"{name}-{i}" if isinstance(name, str) else name["ladder"]
            for i, name in enumerate(opponents, 1)
        ]
        loan = self._lend(entered)
        try:
            runner = self.runners.create_match(
                players,
                names=names,
                ladder=False,
                deadline_ms=deadline_ms,
                time_bank_ms=bank_ms,
                start_timeout=START_TIMEOUT if loan is not None else None,
            )
        except (Draining, ValueError) as e:
            if loan is not None:
                loan.end()
            raise Refused(str(e)) from e
        self.running.add(runner.id)
        self.clients[client] = self.clients.get(client, 0) + 1
        if counted:
            self.counted[runner.id] = (
                (PERSON, person),
                *((BUILTIN, n) if isinstance(n, str) else (LADDER, n["ladder"]) for n in opponents),
            )
        for seat, name in enumerate(opponents, 1):
            if isinstance(name, str):
                runner.join(seat, names[seat])
                self._spawn(self._bot(runner, seat, BOTS[name]))
        if loan is not None:
            fair = runner.match.fairness
            started = StartedMatch(
                runner.id,
                tuple(names),
                tuple(runner.tokens),
                fair.commitment if fair is not None else "",
            )
            loan.seat(started, {names[seat]: seat for seat in range(1, players) if seat in entered})
            self.lending.add(runner.id)
        self._spawn(self._forget(runner, client, loan))
        log.info(
            "person_match_started",
            match=runner.id,
            players=players,
            opponents=names[1:],
            table=counted,
            entered=[names[seat] for seat in entered],
        )
        return runner, 0

    def _lend(self, entered: dict[int, str]) -> Loan | None:
        """Returns the ladder's loan of the entered bots ``entered`` (seat -> name),
        or None when none is asked for; raises Refused when the ladder will not
        lend them."""
        if not entered:
            return None
        if self.ladder is None:
            raise Refused("this server runs no ladder: choose built-in bots")
        if len(self.lending) >= MAX_LADDER_GAMES:
            raise Refused(
                f"{MAX_LADDER_GAMES} games with ladder bots are being played, the most at "
                "once; try again later, or choose built-in bots"
            )
        try:
            return self.ladder.lend(entered.values())
        except LadderError as e:
            raise Refused(str(e)) from e

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _forget(self, runner: Runner, client: str, loan: Loan | None = None) -> None:
        try:
            result = await runner.result()
            seats = self.counted.get(runner.id)
            if seats is not None and result.status == MatchStatus.FINISHED:
                await self._count(PeopleResult(runner.id, runner.clock.now(), seats, result.ranks))
        finally:
            self.counted.pop(runner.id, None)
            self.lending.discard(runner.id)
            if loan is not None:
                loan.end()
            self.running.discard(runner.id)
            left = self.clients.get(client, 1) - 1
            if left:
                self.clients[client] = left
            else:
                self.clients.pop(client, None)

    async def _count(self, result: PeopleResult) -> None:
        """Stores a finished match's result for the people's table (a failed write is
        logged: the game itself is stored with its record)."""
        if self.people is None or self.writer is None:
            return
        try:
            await self.writer.run(self.people.add, result)
            log.info("people_match_counted", match=result.match_id, ranks=list(result.ranks))
        except Exception:
            log.exception("people_match_not_counted", match=result.match_id)

    async def _bot(self, runner: Runner, seat: int, policy: Policy) -> None:
        """Plays ``seat`` with ``policy`` from the seat's own stream to the match's end."""
        rng = random.Random()

        def keep(batch: Batch, now: float) -> Batch:
            return batch

        async for batch in runner.streams.stream(Follower(seat), 0, keep):
            for item in batch:
                asked = item.decision if isinstance(item, visibility.Snapshot) else item
                if not isinstance(asked, Decision):
                    continue
                await asyncio.sleep(BOT_PAUSE)
                if runner.match.decision is asked:
                    runner.answer(seat, asked.id, policy(asked, rng), None)

    def close(self) -> None:
        """Stops the opponents' tasks (the server drains its matches itself), then
        the people's table's writer, after the writes queued."""
        for task in self.tasks:
            task.cancel()
        if self.writer is not None:
            self.writer.close()
        if self.people is not None:
            self.people.close()


def _entered(opponents: list[Any]) -> dict[int, str]:
    """Returns the seats (from 1) of the opponents that are entered bots, with their
    names; raises Refused for an opponent that is neither a built-in bot nor
    ``{"ladder": NAME}``, or an entered bot asked for twice."""
    entered: dict[int, str] = {}
    for seat, name in enumerate(opponents, 1):
        if isinstance(name, str):
            if name not in BOTS:
                raise Refused(f"no built-in bot {quoted(name)}: one of {', '.join(BOTS)}")
            continue
        bot = name.get("ladder") if isinstance(name, dict) else None
        if not isinstance(bot, str) or not bot.strip():
            raise Refused(
                f"an opponent is a built-in bot ({', '.join(BOTS)}) "
                'or {"ladder": NAME}, a bot entered in the ladder'
            )
        if bot in entered.values():
            raise Refused(f"bot {quoted(bot)} can take one seat of a match only")
        entered[seat] = bot
    return entered


def _whole(value: object, default: int, low: int, high: int) -> int:
    """Returns ``value`` when it is a whole number in ``low..high``, else ``default``."""
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    return default


def _seat(runners: Runners, request: dict[str, Any]) -> tuple[Runner, int]:
    """Returns the runner and seat a resume names by its seat token; raises Refused."""
    token = request.get("token")
    found = runners.seat_of(token) if isinstance(token, str) else None
    if found is None:
        raise Refused("no game of this server holds that seat any more")
    return found


async def handler(request: web.Request, tables: Tables) -> web.StreamResponse:
    """Serves one WebSocket of a person's seat: its first message starts a game
    (``start``) or takes a seat again (``resume``); then the page answers (``answer``)
    and the server sends the seat's messages until the match's end."""
    ws = web.WebSocketResponse(heartbeat=20.0, max_msg_size=1 << 16)
    await ws.prepare(request)
    try:
        first = await _read(ws)
        if first is None:
            return ws
        try:
            if first.get("type") == "start":
                runner, seat = tables.start(first, request.remote or "?")
                after = 0
            elif first.get("type") == "resume":
                runner, seat = _seat(tables.runners, first)
                after = _whole(first.get("after"), 0, 0, 1 << 30)
            else:
                raise Refused("the first message must be a start or a resume")
        except Refused as e:
            await _send(ws, {"type": "refused", "error": str(e)})
            return ws
        await _send(
            ws,
            {
                "type": "seated",
                "match": runner.id,
                "seat": seat,
                "token": runner.tokens[seat] if runner.tokens else first.get("token"),
            },
        )
        runner.join(seat)
        counted = runner.id in tables.counted
        reader = asyncio.ensure_future(_answers(ws, runner, seat, counted))
        try:
            await _follow(ws, runner, seat, after, counted)
        finally:
            reader.cancel()
    finally:
        await ws.close()
    return ws


async def _follow(
    ws: web.WebSocketResponse, runner: Runner, seat: int, after: int, counted: bool
) -> None:
    """Sends the seat's message each time its stream wakes, until the match's end."""
    reached = after

    def render(batch: Batch, now: float) -> dict[str, Any]:
        # The message covers the match so far for this seat, whatever woke it.
        nonlocal reached
        out, reached = message(runner, seat, reached, counted)
        return out

    async for out in runner.streams.stream(Follower(seat), after, render, PACE):
        if ws.closed:
            return
        await _send(ws, out)


async def _answers(ws: web.WebSocketResponse, runner: Runner, seat: int, counted: bool) -> None:
    """Takes the page's answers: ``{"type": "answer", "decision": ID, "option": N}``;
    a refusal is sent back as ``{"type": "refused", "error": ...}``."""
    while (got := await _read(ws)) is not None:
        if got.get("type") == "hint":
            await _send(ws, hint(runner, seat, got.get("bot"), counted))
            continue
        if got.get("type") != "answer":
            continue
        decision = got.get("decision")
        option = got.get("option")
        if not isinstance(decision, str) or not isinstance(option, int):
            await _send(
                ws, {"type": "refused", "error": "an answer names a decision and an option"}
            )
            continue
        ruling = runner.answer(seat, decision, option, None)
        if ruling.refusal is not None:
            await _send(ws, {"type": "refused", "error": ruling.message})


def hint(runner: Runner, seat: int, bot: object, counted: bool = False) -> dict[str, Any]:
    """Returns what the built-in bot ``bot`` would answer to the seat's open decision:
    ``{"type": "hint", "decision", "option", "bot"}``, or a refusal when the seat is
    asked nothing, the bot is unknown, or the match is rated: a ladder or competition
    match, or one played for the people's table (``counted``); no hints there. The
    bot is given the seat's decision alone: its options and the seat's view when asked."""
    match = runner.match
    if match.settings.ladder:
        return {"type": "refused", "error": "no hints in a rated match"}
    if counted:
        return {"type": "refused", "error": "no hints in a game for the people's table"}
    policy = BOTS.get(bot) if isinstance(bot, str) else None
    if policy is None:
        return {"type": "refused", "error": f"a hint comes from one of {', '.join(BOTS)}"}
    asked = visibility.snapshot(match, seat, len(match.numbered)).decision
    if asked is None:
        return {"type": "refused", "error": "nothing is asked of you just now"}
    return {
        "type": "hint",
        "decision": asked.id,
        "option": policy(asked, random.Random()),
        "bot": bot,
    }


async def _read(ws: web.WebSocketResponse) -> dict[str, Any] | None:
    """Returns the next JSON object the page sent, or None once it closed."""
    async for msg in ws:
        if msg.type != WSMsgType.TEXT:
            continue
        try:
            data = json.loads(msg.data)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None


async def _send(ws: web.WebSocketResponse, data: dict[str, Any]) -> None:
    if not ws.closed:
        await ws.send_str(json.dumps(data, separators=(",", ":")))
