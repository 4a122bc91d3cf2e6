"""The page's HTTP routes (aiohttp): its files and its JSON, read-only.

Routes (docs/web.md lists every field):

    GET /                          the page (static/index.html); the rest of static/
    GET /api/standings?by=best|newest  standings overall and per player count, each
                                   bot by its best (default) or newest version, with
                                   the leagues and their latest moves
    GET /api/bots/{name}           a bot: ratings, its versions, rating history, results, matches
    GET /api/matches?bot=&limit=&page_token=
                                   the newest ladder matches, live and ended, a page
    GET /api/replay/{id}           an ended match's record as replay steps
    GET /api/live/{id}             a held match now, as a spectator sees it
    GET /api/live/{id}/stream      the same as Server-Sent Events, until its end
    GET /api/competition           the competition this server runs, as anyone sees it
    GET /api/play                  a WebSocket: a person's seat in a game (server.web.play)
    GET /api/people                the people's table (server.web.people), if the server keeps one
    GET /metrics                   the server's Prometheus metrics (server.metrics)

Everything comes from public information: the ladder's tables, stored records of
ended matches, and the spectator view of running ones (``server.web.live``).
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import structlog
from aiohttp import web

from mammamia import RecordError
from mammamia.fairness import is_sealed

from ..app import Arena
from ..db.connection import ERRORS
from ..db.ladder.leagues import League, Move
from ..db.ladder.reads import BEST, NEWEST
from ..db.ladder.rows import LadderMatch, Standing, VersionLine
from ..db.people import PeopleStore
from ..ladder import standings
from ..ladder.confidence import interval
from ..ladder.ratings import Rating
from ..metrics import BotTimes
from ..paging import BadPageToken
from ..quoting import fitted, quoted
from ..streams import Ending, ending
from . import live, people, play, replay
from .competition import held_back, public_status
from .ratings_history import Point, RatingsHistory
from .reads import Reads
from .scrape import handler as metrics_handler

if TYPE_CHECKING:
    from ..competition.run import CompetitionRun
    from ..ladder.ladder import Ladder

log = structlog.get_logger()

STATIC: Final = Path(__file__).resolve().parent / "static"

MAX_LIST: Final = 100
"""Matches listed per request at most."""
MAX_STREAMS: Final = 64
"""Live streams open at once at most, all clients together."""
MAX_STREAMS_PER_CLIENT: Final = 4
"""Live streams one client address may hold open at once."""
REPLAYS_CACHED: Final = 16
"""Replays kept ready (a record of an ended match never changes)."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Page:
    """What the routes share: the arena, the reads, the replay cache, the streams,
    and the competition the server runs (None when it runs none)."""

    def __init__(self, arena: Arena, competition: CompetitionRun | None = None) -> None:
        self.arena = arena
        self.competition = competition
        self.reads = Reads(arena.storage.path)
        self.history = RatingsHistory()
        self.replays: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.streams: dict[str, int] = {}  # client address -> open streams
        self.people_table = False  # whether the server keeps a people's table
        self.closing = False

    def close(self) -> None:
        """Closes the reads (after the ones under way)."""
        self.reads.close()


WEB: Final = web.AppKey("web", Page)


def make_app(
    arena: Arena,
    competition: CompetitionRun | None = None,
    ladder: Ladder | None = None,
    *,
    people_table: bool = False,
) -> tuple[web.Application, Page]:
    """Returns the page's aiohttp application and what its routes share; ``ladder``
    lends its entered bots to the play view (None: built-in opponents only), and
    ``people_table`` keeps the people's table (``server.web.people``)."""
    page = Page(arena, competition)
    page.people_table = people_table
    app = web.Application(middlewares=[_errors])
    app.on_response_prepare.append(_headers)
    app[WEB] = page
    r = app.router
    r.add_get("/", _index)
    r.add_get("/api/standings", _standings)
    r.add_get("/api/bots/{name}", _bot)
    r.add_get("/api/matches", _matches)
    r.add_get("/api/replay/{id}", _replay)
    r.add_get("/api/live/{id}", _live)
    r.add_get("/api/live/{id}/stream", _live_stream)
    r.add_get("/api/competition", _competition)
    people_store = PeopleStore(arena.storage.path) if people_table else None
    tables = play.Tables(arena.runners, ladder, people_store)
    r.add_get("/api/people", _people)

    async def _play(request: web.Request) -> web.StreamResponse:
        return await play.handler(request, tables)

    r.add_get("/api/play", _play)
    app.on_cleanup.append(lambda app: _stop(tables))
    r.add_get("/metrics", metrics_handler(arena))
    r.add_static("/static/", STATIC, append_version=False)
    return app, page


async def _stop(tables: play.Tables) -> None:
    tables.close()


def _page(request: web.Request) -> Page:
    return request.app[WEB]


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _json(data: object) -> web.Response:
    response = web.json_response(data, dumps=lambda d: json.dumps(d, separators=(",", ":")))
    response.headers["Cache-Control"] = "no-store"
    return response


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turns a failed database read into 503 (the server goes on)."""
    try:
        return await handler(request)
    except ERRORS as e:
        log.warning("web_read_failed", path=quoted(request.path), error=fitted(str(e)))
        return _error(503, "the database cannot be read just now; try again")


async def _headers(request: web.Request, response: web.StreamResponse) -> None:
    """Adds headers that keep the page to its own files: nothing is loaded from
    elsewhere, and no other site may frame it."""
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
    )
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"


async def _index(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC / "index.html")


# -- ladder ----------------------------------------------------------------------------


def standing_json(line: standings.Line) -> dict[str, Any]:
    """Returns one line of the standings (:func:`server.ladder.standings.lines`) as JSON."""
    s = line.standing
    return {
        "rank": s.rank,
        "name": s.name,
        "rating": s.rating,
        "mu": s.mu,
        "sigma": s.sigma,
        "low": line.low,
        "high": line.high,
        "p_better": line.p_better,
        "games": s.games,
        "wins": s.wins,
        "pizzas": s.mean_delivered,
        "suspended": s.suspended,
        "version": s.version,
        "versions": s.versions,
        "league": s.league or None,
    }


def league_json(league: League) -> dict[str, Any]:
    """Returns a league as JSON: its name, its boss's name and the built-in bot that
    plays it (both None for a last league without a boss), and ``sigmas``."""
    return {"name": league.name, "boss": league.boss, "bot": league.spec, "sigmas": league.sigmas}


def move_json(move: Move) -> dict[str, Any]:
    """Returns a bot's move between leagues as JSON (``at`` in UNIX seconds)."""
    return {
        "name": move.name,
        "at": move.at,
        "from": move.from_league,
        "to": move.to_league,
        "why": move.why,
        "match": move.match_id,
    }


def history_json(point: Point) -> dict[str, Any]:
    """Returns a bot's rating after one match as JSON, with the standings' interval."""
    low, high = interval(Rating(point.mu, point.sigma))
    return {
        "t": point.ended,
        "mu": point.mu,
        "sigma": point.sigma,
        "rating": point.rating,
        "low": low,
        "high": high,
    }


def version_json(v: VersionLine) -> dict[str, Any]:
    """Returns one of a bot's versions (``LadderReads.versions``) as JSON, with its
    conservative rating and the standings' interval."""
    rating = Rating(v.mu, v.sigma)
    low, high = interval(rating)
    return {
        "version": v.version,
        "rating": rating.conservative,
        "mu": v.mu,
        "sigma": v.sigma,
        "low": low,
        "high": high,
        "games": v.games,
        "wins": v.wins,
        "first_played": v.first_played,
        "last_played": v.last_played,
    }


def bot_line(table: list[Standing], name: str) -> standings.Line | None:
    """Returns the bot's line of ``table``, or None when it has none there."""
    return next((line for line in standings.lines(table) if line.standing.name == name), None)


async def _standings(request: web.Request) -> web.StreamResponse:
    page = _page(request)
    by = NEWEST if request.query.get("by") == NEWEST else BEST
    scopes = await page.reads.run(page.reads.standings, by)
    leagues, moves = await page.reads.run(page.reads.leagues)
    return _json(
        {
            "by": by,
            "leagues": [league_json(league) for league in leagues],
            "moves": [move_json(move) for move in moves],
            "scopes": [
                {
                    "players": players,
                    "rated": rated,
                    "rows": [standing_json(line) for line in standings.lines(rows)],
                }
                for players, (rated, rows) in scopes.items()
            ],
        }
    )


def _limit(request: web.Request, default: int = 30) -> int:
    try:
        return max(1, min(MAX_LIST, int(request.query.get("limit", default))))
    except ValueError:
        return default


def match_json(page: Page, row: LadderMatch, delivered: tuple[int, ...] | None) -> dict[str, Any]:
    """Returns a listed ladder match as JSON; ``live`` when this server holds it
    running (its live view is open), else its replay is (once ended)."""
    held = page.arena.runners.get(row.match_id)
    return {
        "match": row.match_id,
        "players": row.players,
        "status": row.status,
        "created": row.created,
        "names": list(row.names),
        "winners": list(row.winners),
        "delivered": None if delivered is None else list(delivered),
        "live": held is not None and not held.ended,
        "voided": row.void_reason,
        "voided_by": row.voided_by or None,
    }


async def _matches(request: web.Request) -> web.StreamResponse:
    page = _page(request)
    bot = request.query.get("bot") or None
    token = request.query.get("page_token", "")
    try:
        found, delivered = await page.reads.run(
            page.reads.matches_page, bot, _limit(request), token
        )
    except BadPageToken as e:
        return _error(400, str(e))
    return _json(
        {
            "bot": bot,
            "matches": [match_json(page, r, delivered.get(r.match_id)) for r in found.items],
            "next_page_token": found.next_token,
        }
    )


async def _bot(request: web.Request) -> web.StreamResponse:
    page = _page(request)
    name = request.match_info["name"]
    reads = page.reads

    def read() -> dict[str, Any]:
        scopes = reads.standings()
        mine = {players: bot_line(rows, name) for players, (_, rows) in scopes.items()}
        tallies = reads.tallies(name)
        versions = reads.versions(name)
        rows, delivered = reads.matches(name, 20)
        history = page.history.of(reads.ladder(), name)
        return {
            "scopes": mine,
            "tallies": tallies,
            "versions": versions,
            "opponents": reads.opponents(name),
            "matches": (rows, delivered),
            "history": history,
            "behind": page.history.behind,
            "suspended": reads.ladder().suspension(name),
            "moves": reads.ladder().moves(50, name),
        }

    got = await reads.run(read)
    overall = got["scopes"].get(0)
    rows, delivered = got["matches"]
    if overall is None and not rows:
        return _error(404, f"no bot {quoted(name)} on this ladder")
    by_players = []
    for players, tally in sorted(got["tallies"].items()):
        line = got["scopes"].get(players)
        s = None if line is None else line.standing
        by_players.append(
            {
                "players": players,
                "games": tally.games,
                "wins": tally.wins,
                "pizzas": tally.delivered / tally.games if tally.games else 0.0,
                "rating": None if s is None else s.rating,
                "mu": None if s is None else s.mu,
                "sigma": None if s is None else s.sigma,
            }
        )
    return _json(
        {
            "name": name,
            "suspended": None
            if got["suspended"] is None
            else {
                "reason": got["suspended"].reason,
                "by": got["suspended"].by,
                "at": got["suspended"].at,
            },
            "overall": None if overall is None else standing_json(overall),
            "moves": [move_json(m) for m in got["moves"]],
            "by_players": by_players,
            "versions": [version_json(v) for v in got["versions"]],
            "opponents": [
                {
                    "name": o.name,
                    "games": o.games,
                    "ahead": o.ahead,
                    "tied": o.tied,
                    "behind": o.behind,
                }
                for o in got["opponents"]
            ],
            "history": [history_json(p) for p in got["history"]],
            "history_behind": got["behind"],
            "matches": [match_json(page, r, delivered.get(r.match_id)) for r in rows],
            "decisions": decisions_json(page.arena.metrics.bot_times(name)),
        }
    )


def decisions_json(times: BotTimes | None) -> dict[str, Any] | None:
    """Returns a bot's decisions on this server since it started (``server.metrics``)
    as JSON, or None when it has had none here."""
    if times is None:
        return None
    return {
        "answered": times.answered,
        "mean_ms": round(1000 * times.seconds / times.answered, 1) if times.answered else None,
        "slowest_ms": round(1000 * times.slowest, 1) if times.answered else None,
        "deadline_misses": times.missed,
        "since": datetime.fromtimestamp(times.since, UTC).isoformat(timespec="seconds"),
    }


# -- competition -----------------------------------------------------------------------


async def _people(request: web.Request) -> web.StreamResponse:
    page = _page(request)
    if not page.people_table:
        # Not an error: the play view asks whether there is one.
        return _json({"enabled": False})
    results = await page.reads.run(page.reads.people)
    return _json({"enabled": True, **people.table_json(results)})


async def _competition(request: web.Request) -> web.StreamResponse:
    # 200 with null when no competition runs: the page asks on every load to know
    # whether to show its competition view.
    return _json(await public_status(_page(request).competition))


# -- matches ---------------------------------------------------------------------------


async def _replay(request: web.Request) -> web.StreamResponse:
    page = _page(request)
    match_id = request.match_info["id"]
    held = page.arena.runners.get(match_id)
    if held is not None and not held.ended:
        # A running match's record would show every hand: only its live view is public.
        return _error(409, f"match {quoted(match_id)} is still being played: watch it live")
    if await held_back(page.competition, match_id):
        return _held_finals(match_id)
    cached = page.replays.get(match_id)
    if cached is None:
        stored = await page.reads.run(page.reads.stored, match_id)
        if stored is None:
            return _error(404, f"no match {quoted(match_id)}")
        if not stored.status.ended or stored.record is None:
            return _error(409, f"match {quoted(match_id)} is {stored.status} and has no record yet")
        if is_sealed(stored.record):
            # A duplicate set's later matches deal the same cards (docs/ladder.md).
            return _error(
                409,
                f"match {quoted(match_id)} belongs to a duplicate set still being "
                "played: its record comes when the set ends",
            )
        try:
            steps = await page.reads.run(replay.replay, stored.record, stored.names)
        except RecordError as e:
            return _error(500, f"the record of {quoted(match_id)} does not replay: {e}")
        cached = {
            "match": match_id,
            "status": stored.status,
            "reason": stored.reason,
            "ladder": stored.ladder,
            "created": stored.created,
            "ended": stored.ended,
            **steps,
        }
        page.replays[match_id] = cached
        while len(page.replays) > REPLAYS_CACHED:
            page.replays.popitem(last=False)
    response = _json(cached)
    response.enable_compression()
    return response


def _held_finals(match_id: str) -> web.Response:
    return _error(
        409,
        f"match {quoted(match_id)} is a finals match: it shows once the organiser "
        "releases the competition's results",
    )


def _held(page: Page, match_id: str) -> Any:
    return page.arena.runners.get(match_id)


async def _live(request: web.Request) -> web.StreamResponse:
    page = _page(request)
    match_id = request.match_info["id"]
    if await held_back(page.competition, match_id):
        return _held_finals(match_id)
    match = _held(page, match_id)
    if match is None:
        return await _not_held(page, match_id)
    after = _after(request)
    out, _ = live.message(match, after)
    return _json(out)


def _after(request: web.Request) -> int:
    try:
        return max(0, int(request.query.get("after", "0")))
    except ValueError:
        return 0


async def _not_held(page: Page, match_id: str) -> web.StreamResponse:
    """Returns 404, saying whether the match's replay is there instead."""
    stored = await page.reads.run(page.reads.stored, match_id)
    if stored is not None and stored.record is not None:
        return web.json_response(
            {"error": f"match {quoted(match_id)} has ended", "replay": f"#/replay/{match_id}"},
            status=404,
        )
    return _error(404, f"no match {quoted(match_id)} is held by this server")


def _closing(request: web.Request) -> Ending:
    """Returns how the server ends a live stream once it no longer holds the match
    (``server.streams.Ending``): the connection closes at once, dropping what waits
    to be sent to a client that stopped reading, and the handler's task is cancelled,
    its write pending or not. The page, reconnecting, is told the match has ended."""
    task = asyncio.current_task()

    def end(message: str) -> None:
        if request.transport is not None:
            request.transport.abort()
        if task is not None:
            task.cancel()

    return end


async def _live_stream(request: web.Request) -> web.StreamResponse:
    page = _page(request)
    match_id = request.match_info["id"]
    if await held_back(page.competition, match_id):
        return _held_finals(match_id)
    match = _held(page, match_id)
    if match is None:
        return await _not_held(page, match_id)
    client = request.remote or "?"
    if (
        sum(page.streams.values()) >= MAX_STREAMS
        or page.streams.get(client, 0) >= MAX_STREAMS_PER_CLIENT
    ):
        return _error(429, "too many live streams open; close one and try again")
    page.streams[client] = page.streams.get(client, 0) + 1
    try:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        ending.set(_closing(request))
        async for message in live.follow(match, _after(request)):
            data = json.dumps(message, separators=(",", ":"))
            await response.write(f"data: {data}\n\n".encode())
        await response.write(b"event: end\ndata: {}\n\n")
        return response
    finally:
        left = page.streams.get(client, 1) - 1
        if left:
            page.streams[client] = left
        else:
            page.streams.pop(client, None)
