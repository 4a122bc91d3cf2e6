"""Playing on a server: one seat of one match (``run_bot``), or the ladder (``run_ladder``).

The loop joins the seat, opens the Play stream (the fast path: answers go up the
stream that brings the requests) and answers every decision before its deadline.
A ladder bot keeps one PlayMatches call per server for match after match instead
(``_Table``), and resumes a match whose call failed on a Play stream of its own.
It keeps the public events it has seen, so each decision's view carries the
match's history, and the sequence number of the last one: after a dropped
connection it joins again and resumes from there (the new stream's snapshot
brings the events missed and the open decision), waiting between attempts with
bounded exponential backoff; a bot process restarted with the same token resumes
its seat too, from the snapshot. A server that crashed resumes its running matches
when it starts again on the same database, so a seat retries through the outage;
matches a drain (SIGTERM) could not wait for are aborted, and their tokens refused. A seat
is given up when the server refuses it (unknown token, match gone) or stays
unreachable for ``give_up`` seconds. Ctrl-C stops the loop; the connection is
closed on the way out.

A bot that raises, answers illegally or runs past its deadline is answered for
with a safe legal option (``client_sdk.bot.decide``), and the loop goes on. Calls
into a bot are strictly one at a time: a call that ran past its deadline cannot be
stopped (it runs on a thread), so until it returns every decision is answered with
the safe option without calling the bot, and its late answer is dropped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import grpc
import grpc.aio
import structlog

from mammamia import Event, View
from mammamia_pb import arena_pb2_grpc as rpc

from . import wire
from .bot import Bot, Decision, decide, fallback

log = structlog.get_logger()

FIRST_DELAY: Final = 0.2
MAX_DELAY: Final = 5.0
GIVE_UP: Final = 120.0
SAFETY_MS: Final = 150
"""Time kept in hand before a deadline to send the answer."""
BATCH_MS: Final = 1000
"""The batching bound the seat's streams ask for (ObserveRequest.batch_ms): a bot reads
the others' turns only when it is asked, so they may wait for its next request (or a
second) instead of costing the server a message each."""

_REFUSED: Final = {
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.ALREADY_EXISTS,
}


def _channel(server: str, credentials: grpc.ChannelCredentials | None) -> grpc.aio.Channel:
    """Returns a channel to ``server``: TLS with ``credentials``, else plain text."""
    if credentials is not None:
        return grpc.aio.secure_channel(server, credentials)
    return grpc.aio.insecure_channel(server)


def tls_credentials(ca_pem: bytes | None = None) -> grpc.ChannelCredentials:
    """Returns TLS credentials trusting ``ca_pem`` (the system's roots when None)."""
    return grpc.ssl_channel_credentials(ca_pem)


class SeatRefused(RuntimeError):
    """The server refused the seat or the bot (bad token or key, unknown match, taken name)."""


class KeyRefused(SeatRefused):
    """The ladder refused the bot's key (PERMISSION_DENIED): the message names the key
    file and the ways out."""


class ConnectionLost(RuntimeError):
    """The server stayed unreachable for longer than the ``give_up`` time."""


def unreachable(server: str) -> str:
    """Returns the hint for a server that does not answer."""
    return f"is the server running at {server}?"


def _key_refused(name: str, details: str, key_file: str | None) -> KeyRefused:
    where = repr(key_file) if key_file else f"the key file ({name}.key, or the --key-file given)"
    return KeyRefused(
        f"ladder {name!r}: the server refused the bot's key ({details}). "
        f"The key in {where} is not {name!r}'s on this server: if the server's database "
        f"was reset, delete {where} and the name is registered again on the next start; "
        f"otherwise give the file that holds {name!r}'s key with --key-file FILE"
    )


def _next_delay(backoff: Backoff, server: str) -> float:
    """Returns the backoff's next delay; raises ConnectionLost naming the server."""
    try:
        return backoff.next_delay()
    except ConnectionLost as e:
        raise ConnectionLost(f"{server}: {e}: {unreachable(server)}") from None


@dataclass(frozen=True)
class MatchResult:
    """How a match ended for one seat. ``status`` is ``finished`` or ``aborted``."""

    match_id: str
    seat: int
    status: str
    winners: tuple[int, ...]
    delivered: tuple[int, ...]
    ranks: tuple[int, ...]
    view: View | None
    """The seat's final view (None if the stream never sent one)."""
    replaced: int
    """Decisions the bot failed (raised, illegal or too slow) that were answered for it."""

    @property
    def won(self) -> bool:
        """Whether this seat is among the winners."""
        return self.seat in self.winners


class Backoff:
    """Delays between reconnection attempts: doubling from ``first`` up to ``most``,
    jittered, and a clock that says when to give up."""

    def __init__(
        self, first: float = FIRST_DELAY, most: float = MAX_DELAY, give_up: float = GIVE_UP
    ) -> None:
        self.first, self.most, self.give_up = first, most, give_up
        self.attempt = 0
        self.since: float | None = None

    def reset(self) -> None:
        """Forgets past failures (the connection works again)."""
        self.attempt = 0
        self.since = None

    def next_delay(self) -> float:
        """Returns the delay before the next attempt; raises ConnectionLost past give_up."""
        now = time.monotonic()
        if self.since is None:
            self.since = now
        elif now - self.since > self.give_up:
            raise ConnectionLost(f"server unreachable for {now - self.since:.0f} s")
        delay = min(self.most, self.first * 2**self.attempt)
        self.attempt += 1
        return float(delay * random.uniform(0.75, 1.0))


class _Seat:
    """What the loop knows of its seat between connections."""

    def __init__(self, bot: Bot, token: str) -> None:
        self.bot = bot
        self.token = token
        self.metadata = (("seat-token", token),)
        self.match_id = ""
        self.seat = -1
        self.after = 0  # last numbered event seen
        self.history: list[Event] = []
        self.answered: dict[str, int] = {}  # decision id -> option sent (sent again
        # without asking the bot, should it be open)
        self.started = False
        # Whether a server has taken the seat for this process (a Join answered, or a
        # snapshot on PlayMatches): a Join after that is a rejoin.
        self.joined = False
        self.view: View | None = None
        self.replaced = 0
        self.late: asyncio.Future[Decision] | None = None  # a call past its deadline
        # Entropy of the seat's own, mixed into the deal with the server's committed
        # seed (docs/fairness.md), so that the server cannot choose the deal alone.
        self.client_seed = secrets.token_hex(16)

    def busy(self) -> bool:
        """Returns whether a call into the bot that ran past its deadline still runs."""
        return self.late is not None and not self.late.done()


async def play_seat(
    bot: Bot,
    server: str,
    token: str,
    *,
    name: str | None = None,
    backoff: Backoff | None = None,
    credentials: grpc.ChannelCredentials | None = None,
) -> MatchResult:
    """Returns the result once the match ends, playing the seat ``token`` names.

    Raises SeatRefused when the server refuses the seat and ConnectionLost when it
    stays unreachable; reconnects and resumes on any other failure. ``credentials``
    connect with TLS (see ``tls_credentials``).
    """
    return await _play_seat(
        _Seat(bot, token), server, name or bot.name, backoff or Backoff(), credentials
    )


async def _play_seat(
    seat: _Seat,
    server: str,
    name: str,
    backoff: Backoff,
    credentials: grpc.ChannelCredentials | None,
) -> MatchResult:
    """Returns the result once the match ends, playing ``seat`` from where it is."""
    while True:
        try:
            async with _channel(server, credentials) as channel:
                result = await _connect(seat, rpc.SeatStub(channel), name, backoff)
            if result is not None:
                return result
            log.warning(
                "stream_closed", match=seat.match_id, seat=seat.seat, after_sequence=seat.after
            )
        except grpc.aio.AioRpcError as e:
            if e.code() in _REFUSED:
                raise SeatRefused(f"{server}: {e.code().name}: {e.details()}") from None
            log.warning(
                "connection_lost",
                server=server,
                match=seat.match_id or None,
                seat=seat.seat,
                code=e.code().name,
                after_sequence=seat.after,
            )
        except asyncio.InvalidStateError:
            # The stream ended (the connection dropped) while an answer was on its way;
            # the decision is asked again after the reconnect and answered the same.
            log.warning(
                "connection_lost",
                server=server,
                match=seat.match_id or None,
                seat=seat.seat,
                code="STREAM_FINISHED",
                after_sequence=seat.after,
            )
        delay = _next_delay(backoff, server)
        log.info("reconnecting", server=server, delay_s=round(delay, 2), attempt=backoff.attempt)
        await asyncio.sleep(delay)


async def _connect(
    seat: _Seat, stub: rpc.SeatAsyncStub, name: str, backoff: Backoff
) -> MatchResult | None:
    """Returns the result if the match ended on this connection, None if the stream
    closed early; raises AioRpcError when the connection fails."""
    reply = await stub.Join(
        wire.join_request(name, seat.client_seed), metadata=seat.metadata, timeout=10
    )
    match_id, number, colour, players, deadline_ms = wire.joined(reply)
    # Not told by the match id: a ladder seat has it from its assignment, before any
    # server took the seat.
    first, seat.joined = not seat.joined, True
    seat.match_id, seat.seat = match_id, number
    log.info(
        "seat_joined" if first else "seat_rejoined",
        match=match_id,
        seat=number,
        colour=colour,
        players=players,
        deadline_ms=deadline_ms,
        bot=seat.bot.name,
        after_sequence=seat.after,
    )
    call = stub.Play(metadata=seat.metadata)
    try:
        await call.write(wire.observe(seat.after, BATCH_MS))
        return await _follow(seat, call, backoff)
    finally:
        call.cancel()


async def _follow(
    seat: _Seat, call: wire.PlayCall, backoff: Backoff, taken: Callable[[], None] | None = None
) -> MatchResult | None:
    """Returns the result once the seat's match has ended, playing it on ``call``; None
    if the call ended first. Raises AioRpcError when the call fails. ``taken`` is
    called once, when the call's first snapshot shows that the server took the seat."""
    while (msg := wire.arrived(await call.read())) is not None:
        backoff.reset()
        for item in wire.incomings(msg):
            if isinstance(item, wire.Snapshot):
                if not seat.match_id:  # a place's seat: the snapshot says which
                    seat.match_id = item.match_id
                    seat.seat = -1 if item.view.seat is None else item.view.seat
                seat.joined = True
                if taken is not None:
                    taken()
                    taken = None
                for happened in item.history:
                    seat.history.append(happened.event)
                seat.after = max(seat.after, item.sequence)
                seat.view = dataclasses.replace(item.view, history=tuple(seat.history))
                if item.asked is not None:
                    await _answer(seat, call, item.asked)
            elif isinstance(item, wire.Happened):
                seat.after = item.sequence
                seat.history.append(item.event)
            elif isinstance(item, wire.Defaulted):
                seat.after = item.sequence
                if item.seat == seat.seat:
                    log.warning(
                        "decision_defaulted",
                        match=seat.match_id,
                        seat=seat.seat,
                        decision=item.decision_id,
                        strikes=item.strikes,
                        autopilot=item.autopilot,
                    )
            elif isinstance(item, wire.Asked):
                await _answer(seat, call, item)
            elif isinstance(item, wire.Replied):
                _replied(seat, item)
            elif isinstance(item, wire.Ended):
                return _ended(seat, item, idle=await _idle(seat))
    return None


class _Table:
    """The bot's place on one server for match after match: a connection and, on it,
    one PlayMatches call, where each seat is taken with a ``sit`` instead of a Join
    and a Play call of its own (on a busy server a new call can wait seconds to be
    taken up). Opened on first use; dropped after a failure, and opened again for the
    next seat."""

    def __init__(self, server: str, credentials: grpc.ChannelCredentials | None) -> None:
        self.server = server
        self._credentials = credentials
        self._channel: grpc.aio.Channel | None = None
        self._call: wire.PlayCall | None = None
        self.busy = False
        self.unsupported = False  # a server older than PlayMatches

    async def play(self, seat: _Seat, name: str, backoff: Backoff) -> MatchResult | None:
        """Returns the result once the seat's match has ended, or None if the call
        ended first (the table is dropped then). Raises AioRpcError (the table dropped)
        when the call fails."""
        self.busy = True
        try:
            if self._call is None:
                self._channel = _channel(self.server, self._credentials)
                self._call = rpc.SeatStub(self._channel).PlayMatches()
                log.info("table_opened", server=self.server)
            after = seat.after
            await self._call.write(wire.sit(seat.token, after, name, seat.client_seed, BATCH_MS))

            def taken() -> None:
                log.info(
                    "seat_taken",
                    match=seat.match_id,
                    seat=seat.seat,
                    bot=seat.bot.name,
                    call="PlayMatches",
                    after_sequence=after,
                )

            result = await _follow(seat, self._call, backoff, taken)
        except BaseException:
            await self.close()
            raise
        finally:
            self.busy = False
        if result is None:
            await self.close()
        return result

    async def close(self) -> None:
        """Closes the call and the connection, if open."""
        call, channel, self._call, self._channel = self._call, self._channel, None, None
        if call is not None:
            call.cancel()
        if channel is not None:
            await channel.close()


async def _answer(seat: _Seat, call: wire.PlayCall, asked: wire.Asked) -> None:
    """Answers a decision (again, with the same option, if it was answered before)."""
    if asked.decision_id in seat.answered:
        await call.write(wire.answer(asked.decision_id, seat.answered[asked.decision_id]))
        return
    view = dataclasses.replace(asked.view, history=tuple(seat.history))
    seat.view = view
    bot = seat.bot
    if not seat.started:
        seat.started = True
        await _hook(bot, "on_game_start", view)
    budget = max(0.05, (asked.default_in_ms - SAFETY_MS) / 1000)
    started = time.monotonic()
    if seat.busy():
        decision = _replaced(seat, asked, view, "still deciding an earlier decision")
    else:
        call_bot = asyncio.ensure_future(asyncio.to_thread(decide, bot, view, asked.decision_id))
        try:
            # Shielded: the thread cannot be stopped, so the call is kept (as late)
            # to know when the bot is free again.
            decision = await asyncio.wait_for(asyncio.shield(call_bot), budget)
        except TimeoutError:
            seat.late = call_bot
            call_bot.add_done_callback(
                lambda _: log.info(
                    "bot_late_answer_dropped", bot=bot.name, decision=asked.decision_id
                )
            )
            decision = _replaced(seat, asked, view, f"no answer within {budget:.2f} s")
    if decision.fault is not None:
        seat.replaced += 1
    option = view.legal.index(decision.action)
    seat.answered[asked.decision_id] = option
    await call.write(wire.answer(asked.decision_id, option, decision.note))
    if decision.fault is None:
        try:
            bot.on_answered(time.monotonic() - started)
        except Exception as e:
            log.warning(
                "bot_hook_failed",
                bot=bot.name,
                hook="on_answered",
                fault=f"{type(e).__name__}: {e}",
            )
    log.debug(
        "decision_answered",
        match=seat.match_id,
        seat=seat.seat,
        decision=asked.decision_id,
        action=str(decision.action),
        ms=round((time.monotonic() - started) * 1000, 1),
    )


def _replaced(seat: _Seat, asked: wire.Asked, view: View, fault: str) -> Decision:
    """Returns the safe decision taken for the bot, logging why."""
    action = fallback(view)
    log.warning(
        "bot_decision_replaced",
        bot=seat.bot.name,
        decision=asked.decision_id,
        kind="resolve" if asked.resolve else "turn",
        seat=view.seat,
        fault=fault,
        played=str(action),
    )
    return Decision(action, fault)


async def _idle(seat: _Seat, timeout: float = 5.0) -> bool:
    """Returns whether the bot is free (waiting up to ``timeout`` for a late call)."""
    if not seat.busy():
        return True
    assert seat.late is not None
    done, _ = await asyncio.wait({seat.late}, timeout=timeout)
    return bool(done)


def _replied(seat: _Seat, reply: wire.Replied) -> None:
    """Logs a refused answer: one for a closed decision is routine after a reconnect."""
    if reply.accepted:
        return
    (log.warning if reply.still_open else log.info)(
        "answer_refused",
        match=seat.match_id,
        seat=seat.seat,
        decision=reply.decision_id,
        refusal=reply.refusal,
        reason=reply.message,
    )


def _ended(seat: _Seat, ended: wire.Ended, *, idle: bool = True) -> MatchResult:
    """Returns the seat's result and calls the bot's end hook with its final view
    (unless the bot is not ``idle``: still inside a late call)."""
    seat.history.append(wire.game_over_event())
    final = _final_view(seat, ended)
    if final is not None and not idle:
        log.warning(
            "bot_hook_skipped",
            bot=seat.bot.name,
            hook="on_game_end",
            fault="the bot is still deciding a decision past its deadline",
        )
    elif final is not None:
        try:
            seat.bot.on_game_end(final)
        except Exception as e:
            log.warning(
                "bot_hook_failed",
                bot=seat.bot.name,
                hook="on_game_end",
                fault=f"{type(e).__name__}: {e}",
            )
    log.info(
        "match_ended",
        match=seat.match_id,
        seat=seat.seat,
        status=ended.status,
        winners=list(ended.winners),
        delivered=list(ended.delivered),
        replaced=seat.replaced,
    )
    return MatchResult(
        seat.match_id,
        seat.seat,
        ended.status,
        ended.winners,
        ended.delivered,
        ended.ranks,
        final,
        seat.replaced,
    )


def _final_view(seat: _Seat, ended: wire.Ended) -> View | None:
    """Returns the final view the server sent, with the whole history (the last view
    seen should an older server send none)."""
    final = ended.view or seat.view
    return None if final is None else dataclasses.replace(final, history=tuple(seat.history))


async def _hook(bot: Bot, hook: str, view: View) -> None:
    try:
        await asyncio.to_thread(getattr(bot, hook), view)
    except Exception as e:
        log.warning("bot_hook_failed", bot=bot.name, hook=hook, fault=f"{type(e).__name__}: {e}")


def run_bot(
    bot: Bot,
    server: str,
    token: str,
    *,
    name: str | None = None,
    give_up: float = GIVE_UP,
    credentials: grpc.ChannelCredentials | None = None,
) -> MatchResult:
    """Returns the result after playing the seat ``token`` names on ``server`` (host:port)
    to the end of its match. Raises SeatRefused, ConnectionLost, or KeyboardInterrupt
    on Ctrl-C (after closing the connection)."""
    return asyncio.run(
        play_seat(
            bot, server, token, name=name, backoff=Backoff(give_up=give_up), credentials=credentials
        )
    )


# -- places ----------------------------------------------------------------------------


async def play_place(
    factory: Callable[[], Bot],
    server: str,
    *,
    name: str = "",
    placed: Callable[[str], None] | None = None,
    matches: int | None = None,
    credentials: grpc.ChannelCredentials | None = None,
) -> int:
    """Returns the number of matches played on one PlayMatches call made a place
    (docs/protocol.md, "Places"), each by a new bot from ``factory``: every match an
    organiser creates naming the place's token, which ``placed`` is given once the
    server has made the call a place. Plays until ``matches`` have been played (None:
    until cancelled). Raises SeatRefused when the server refuses the place, and
    ConnectionLost when its call fails or ends: a place is not resumed (a new call
    would be a new place, with a new token)."""
    played = 0
    async with _channel(server, credentials) as channel:
        call = rpc.SeatStub(channel).PlayMatches()
        try:
            await call.write(wire.wait(name, BATCH_MS))
            first = wire.arrived(await call.read())
            waiting = (
                [i for i in wire.incomings(first) if isinstance(i, wire.Waiting)]
                if first is not None
                else []
            )
            if not waiting:
                raise ConnectionLost(f"{server}: the server did not make the call a place")
            log.info("place_opened", server=server, name=name or None)
            if placed is not None:
                placed(waiting[0].place)
            while matches is None or played < matches:
                result = await _follow(_Seat(factory(), ""), call, Backoff())
                if result is None:
                    raise ConnectionLost(f"{server}: the server ended the place's call")
                played += 1
        except grpc.aio.AioRpcError as e:
            if e.code() in _REFUSED:
                raise SeatRefused(f"{server}: {e.code().name}: {e.details()}") from None
            raise ConnectionLost(f"{server}: {e.code().name}: {e.details()}") from None
        finally:
            call.cancel()
    return played


def run_place(
    factory: Callable[[], Bot],
    server: str,
    *,
    name: str = "",
    placed: Callable[[str], None] | None = None,
    matches: int | None = None,
    credentials: grpc.ChannelCredentials | None = None,
) -> int:
    """Returns the number of matches played (see ``play_place``); runs until Ctrl-C
    (KeyboardInterrupt) unless ``matches`` is given."""
    return asyncio.run(
        play_place(
            factory, server, name=name, placed=placed, matches=matches, credentials=credentials
        )
    )


# -- the ladder ------------------------------------------------------------------------


async def register(
    server: str, name: str, credentials: grpc.ChannelCredentials | None = None
) -> str:
    """Returns the secret key of a newly registered ladder bot; raises SeatRefused
    when the name is taken or not allowed."""
    async with _channel(server, credentials) as channel:
        try:
            reply = await rpc.LadderStub(channel).Register(wire.register_request(name), timeout=10)
        except grpc.aio.AioRpcError as e:
            if e.code() in _REFUSED:
                raise SeatRefused(f"register {name!r}: {e.code().name}: {e.details()}") from None
            raise ConnectionLost(
                f"{server}: {e.code().name}: {e.details()}: {unreachable(server)}"
            ) from None
    return wire.registered_key(reply)


async def play_ladder(
    factory: Callable[[], Bot],
    server: str,
    name: str,
    key: str,
    *,
    give_up: float = GIVE_UP,
    matches: int | None = None,
    credentials: grpc.ChannelCredentials | None = None,
    key_file: str | None = None,
    version: str = "",
) -> int:
    """Returns the number of matches played after entering the ladder as ``version``
    of ``name`` ("": the ladder's default version; docs/ladder.md, "Versions") and
    playing every assignment (each with a fresh bot) until stopped, or until
    ``matches`` have been played. Raises SeatRefused when refused, KeyRefused (naming
    ``key_file``, where the key came from, and the ways out) for a key that does not
    match, and ConnectionLost when the server stays unreachable."""
    backoff = Backoff(give_up=give_up)
    tasks: set[asyncio.Task[MatchResult | None]] = set()
    seen: set[tuple[str, str]] = set()  # (match, host): a match taken over is played anew
    played = 0
    done = asyncio.Event()

    def finished(task: asyncio.Task[MatchResult | None]) -> None:
        nonlocal played
        tasks.discard(task)
        if not task.cancelled() and task.result() is not None:
            played += 1
            if matches is not None and played >= matches:
                done.set()

    tables: dict[str, _Table] = {}

    async def play(assignment: wire.Assigned) -> MatchResult | None:
        # Another host of the ladder may run the match: play there.
        at = assignment.host_address or server
        seat = _Seat(factory(), assignment.seat_token)
        seat.match_id, seat.seat = assignment.match_id, assignment.seat
        table = tables.setdefault(at, _Table(at, credentials))
        try:
            if not table.busy and not table.unsupported:
                try:
                    result = await table.play(seat, name, Backoff(give_up=give_up))
                    if result is not None:
                        return result
                    log.warning(
                        "stream_closed",
                        match=seat.match_id,
                        seat=seat.seat,
                        after_sequence=seat.after,
                    )
                except grpc.aio.AioRpcError as e:
                    if e.code() in _REFUSED:
                        raise SeatRefused(f"{at}: {e.code().name}: {e.details()}") from None
                    if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                        # A server without PlayMatches: a Play call per match from now on.
                        table.unsupported = True
                        log.info("play_matches_unsupported", server=at)
                    else:
                        log.warning(
                            "connection_lost",
                            server=at,
                            match=seat.match_id,
                            seat=seat.seat,
                            code=e.code().name,
                            after_sequence=seat.after,
                        )
                except asyncio.InvalidStateError:
                    log.warning(
                        "connection_lost",
                        server=at,
                        match=seat.match_id,
                        seat=seat.seat,
                        code="STREAM_FINISHED",
                        after_sequence=seat.after,
                    )
            # Resumed (or, with the table taken, played) on a Play call of its own.
            return await _play_seat(seat, at, name, Backoff(give_up=give_up), credentials)
        except (SeatRefused, ConnectionLost) as e:
            log.warning("ladder_match_lost", match=assignment.match_id, fault=str(e))
            return None

    async def enter() -> None:
        metadata = (("bot-key", key),)
        while True:
            try:
                async with _channel(server, credentials) as channel:
                    stream = rpc.LadderStub(channel).Enter(
                        wire.enter_request(name, version), metadata=metadata
                    )
                    # The server sends its headers once it has let the bot in: only
                    # then has it entered (a call to no server ends without them).
                    await stream.initial_metadata()
                    if not stream.done():
                        log.info("ladder_entered", server=server, name=name, version=version)
                    async for msg in stream:
                        backoff.reset()
                        waiting = wire.notice(msg)
                        if waiting is not None:
                            log.info("ladder_notice", server=server, name=name, notice=waiting)
                            continue
                        assignment = wire.assigned(msg)
                        if (assignment.match_id, assignment.host_address) in seen:
                            continue
                        seen.add((assignment.match_id, assignment.host_address))
                        log.info(
                            "ladder_assignment",
                            match=assignment.match_id,
                            seat=assignment.seat,
                            players=assignment.players,
                            host=assignment.host_address or server,
                            commitment=assignment.commitment,
                            **(
                                {"set": assignment.set_id, "set_index": assignment.set_index}
                                if assignment.set_id
                                else {}
                            ),
                        )
                        task = asyncio.create_task(play(assignment))
                        tasks.add(task)
                        task.add_done_callback(finished)
                log.warning("ladder_stream_closed", server=server, name=name)
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.PERMISSION_DENIED:
                    raise _key_refused(name, e.details() or "", key_file) from None
                if e.code() in _REFUSED:
                    raise SeatRefused(f"ladder {name!r}: {e.code().name}: {e.details()}") from None
                log.warning("ladder_connection_lost", server=server, code=e.code().name)
            delay = _next_delay(backoff, server)
            log.info("reconnecting", server=server, delay_s=round(delay, 2))
            await asyncio.sleep(delay)

    entering = asyncio.create_task(enter())
    waiting = asyncio.create_task(done.wait())
    try:
        await asyncio.wait({entering, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if entering.done():
            entering.result()
        return played
    finally:
        for task in (entering, waiting, *tasks):
            task.cancel()
        for table in tables.values():
            await table.close()


def run_ladder(
    factory: Callable[[], Bot],
    server: str,
    name: str,
    key: str,
    *,
    give_up: float = GIVE_UP,
    matches: int | None = None,
    credentials: grpc.ChannelCredentials | None = None,
    key_file: str | None = None,
    version: str = "",
) -> int:
    """Returns the number of ladder matches played (see ``play_ladder``); runs until
    Ctrl-C (KeyboardInterrupt) unless ``matches`` is given."""
    return asyncio.run(
        play_ladder(
            factory,
            server,
            name,
            key,
            give_up=give_up,
            matches=matches,
            credentials=credentials,
            key_file=key_file,
            version=version,
        )
    )
