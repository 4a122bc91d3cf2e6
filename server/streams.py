"""What leaves the server for each stream of a match, and when: the one place that
decides it.

A match's streams (Observe, Play, Watch, and the web page's live view) each have a
``Follower``: its viewer (a seat, or None for a spectator), how far into the
match's log it has read, and the event that wakes it. ``Streams`` holds them for
one match. Its runner (``server.runner``) tells it how far the log may be shown
(``show``: only what the journal has made durable), and ``Streams`` wakes each
follower:

- at once for a decision request to its seat and for the end;
- otherwise at most its hold later (``HOLD_SECONDS``, or what the stream asked
  for: ``holding``), so that the turns of the others reach a seat in the same
  message as its next decision request;
- for a Play stream, at once for the reply to a refused answer (the seat may
  answer again), and after the hold for an accepted one's, which goes out ahead of
  what the answer caused (``reply``, ``Replies``).

One loop (``Streams.stream``) sends what a follower is woken for: a snapshot first
(``server.visibility``), then, at each wake, every item pending for its viewer as
one batch, until the match's end has gone out. ``encoded`` renders a batch as the
bytes of one ``SeatEvents`` message (``server.wire``); the web page renders its
own.

A stream whose client stops reading waits in its write, and would hold its match
for as long as the connection lives. So when the server lets go of an ended match
(``Runners``: its hold, ``keep_ended``), ``Streams.expire`` ends every stream of it
still open through the ``Ending`` its call set (``ending``): the gRPC calls with
NOT_FOUND, after the message already on its way; the web page's by closing it.
``Open`` counts the streams open on a server, those of matches let go of included.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Final, TypeVar

from . import visibility, wire
from .clock import Clock, Timer
from .events import Asked, Ended
from .match import Match

HOLD_SECONDS: Final = 0.02
"""How long events that ask nothing of a stream's seat may wait before its stream is
woken: one gRPC message per decision instead of one per event (a stream may ask for
longer, see ``holding``)."""

MAX_HOLD_SECONDS: Final = 10.0
"""The longest hold a stream may ask for."""

HOLD_SLACK: Final = 0.001
"""How early a hold may end: a timer may run a little before its time."""


def holding(batch_ms: int) -> float:
    """Returns the hold of a stream that asked for ``batch_ms`` (ObserveRequest.batch_ms,
    0: the default HOLD_SECONDS), in seconds, at most MAX_HOLD_SECONDS."""
    return HOLD_SECONDS if batch_ms <= 0 else min(batch_ms / 1000, MAX_HOLD_SECONDS)


class Replies:
    """A Play call's replies not yet sent, each with the log length when its answer
    came. Bounded: the reader waits for room (:meth:`room`) before it reads the next
    answer, so a client that stops reading its stream stops being read, and HTTP/2
    flow control holds back what it sends."""

    __slots__ = ("_items", "_limit", "_room")

    def __init__(self, limit: int) -> None:
        self._items: deque[tuple[int, int, bytes]] = deque()
        self._limit = limit
        self._room = asyncio.Event()
        self._room.set()

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)

    async def room(self) -> None:
        """Returns once fewer than the limit wait to be sent."""
        while len(self._items) >= self._limit:
            self._room.clear()
            await self._room.wait()

    def append(self, position: int, reply: bytes, ready: int) -> None:
        """Queues ``reply``, to go before the log entries from ``position`` on, once the
        log up to ``ready`` may be sent (what the answer caused is committed)."""
        self._items.append((position, ready, reply))

    def due(self, cursor: int, visible: int) -> bool:
        """Returns True when the first reply goes before the log entry at ``cursor``
        and the log it waits for is ``visible``."""
        return bool(self._items) and self._items[0][0] <= cursor and self._items[0][1] <= visible

    def take(self) -> bytes:
        """Returns the first reply, removed (and makes room for the reader)."""
        reply = self._items.popleft()[2]
        self._room.set()
        return reply


Ending = Callable[[str], None]
"""Ends a stream's call from the server side, even while a write to its client is
pending, with a message saying why; called on the event loop, it returns at once."""

ending: Final[contextvars.ContextVar[Ending | None]] = contextvars.ContextVar(
    "ending", default=None
)
"""How the server ends the calls of the task that sets it (a gRPC servicer, the web
page's live view): each stream that task opens keeps it (``Streams.expire``). None:
the stream is only stopped, and ends when next woken."""


class Open:
    """The count of streams open on one server: every ``Streams.stream`` loop from
    its opening to its end, those of matches no longer held included."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class Follower:
    """One stream of a match: its viewer (a seat, or None for a spectator), how far
    into the match's log it has read, the event that wakes it, and, for a Play
    stream, its replies not yet sent. ``stopped``: the stream ends when next woken;
    ``ending``: how the server ends its call (see ``ending``)."""

    __slots__ = ("cursor", "ending", "hold", "replies", "stopped", "viewer", "wake")

    def __init__(
        self, viewer: int | None, hold: float = HOLD_SECONDS, replies: Replies | None = None
    ) -> None:
        self.viewer = viewer
        self.cursor = 0
        self.hold = hold  # seconds events may wait that ask nothing of it
        self.replies = replies
        self.stopped = False
        self.wake = asyncio.Event()
        self.ending: Ending | None = None

    def stop(self) -> None:
        """Ends the stream: at once if it waits, else when it next would."""
        self.stopped = True
        self.wake.set()


Batch = Sequence[visibility.Item | bytes]
"""What one wake of a stream sends: its viewer's items, and Play replies (bytes)."""

T = TypeVar("T")

Render = Callable[[Batch, float], T]
"""Makes a stream's message of a batch, at the time given."""


class Streams:
    """The streams of one match, driven on the event loop. All methods run on it."""

    def __init__(self, match: Match, clock: Clock, opened: Open | None = None) -> None:
        self.match = match
        self.clock = clock
        self.opened = opened or Open()  # the server's count of open streams
        self.visible = len(match.log)  # the log entries streams may send
        self.followers: set[Follower] = set()
        self._advanced = asyncio.Event()  # set whenever ``visible`` moves on
        self._written: asyncio.Future[None] | None = None
        # The followers held, by their hold: the timer that wakes the first of them,
        # and each one with the time its hold began.
        self._held: dict[float, tuple[Timer, dict[Follower, float]]] = {}

    # -- what may be shown -----------------------------------------------------------

    def written(self, write: asyncio.Future[None]) -> None:
        """Notes the journal's write of the latest input (see :meth:`committed`)."""
        self._written = write

    def pending(self) -> asyncio.Future[None] | None:
        """Returns the write of the latest input while it is not done, else None."""
        write = self._written
        return None if write is None or write.done() else write

    async def committed(self) -> None:
        """Returns once every input written so far is committed (at once without a
        journal); raises StorageError when one could not be."""
        if self._written is not None:
            await asyncio.shield(self._written)

    async def caught_up(self) -> None:
        """Returns once the whole log so far is visible (every input it came from is
        committed, or the match's end is stored); raises StorageError when an input
        could not be committed.

        Why not only :meth:`committed`: the last input may be committed while earlier
        entries still wait (a match cut off by a failed write shows its log once its
        end is stored), and waiting on a done future again would spin the event loop."""
        while self.visible < len(self.match.log):
            await self.committed()
            if self.visible < len(self.match.log):
                self._advanced.clear()
                await self._advanced.wait()

    def show(self, upto: int) -> None:
        """Makes the log up to ``upto`` visible, and wakes the followers that its new
        entries ask something of now, the others after their hold."""
        if upto <= self.visible:
            return
        new = self.match.log[self.visible : upto]
        self.visible = upto
        self._advanced.set()
        ended = any(isinstance(e, Ended) for e in new)
        asked = {e.decision.seat for e in new if isinstance(e, Asked)}
        for f in self.followers:
            if ended or f.viewer in asked:
                f.wake.set()
                self._unhold(f)
            else:
                self.hold(f)

    def reply(self, follower: Follower, position: int, reply: bytes, accepted: bool) -> None:
        """Queues a Play reply on ``follower``'s stream, to go before the log entries
        from ``position`` on (those its answer caused) once they may be shown.

        A refusal goes at once: the seat may have to answer again. An accepted
        answer's reply waits, as other events do, at most the stream's hold, to go
        with what it caused and usually with the seat's next request."""
        assert follower.replies is not None
        follower.replies.append(position, reply, len(self.match.log))
        if follower in self.followers:  # (else its stream sends it as it opens)
            if accepted:
                self.hold(follower)
            else:
                follower.wake.set()

    # -- following -------------------------------------------------------------------

    def follow(self, viewer: int | None, hold: float = HOLD_SECONDS) -> Follower:
        """Returns a new follower of the log from its end, whose events that ask
        nothing of it may wait ``hold`` seconds."""
        f = Follower(viewer, hold)
        self._open(f)
        return f

    def _open(self, f: Follower) -> None:
        f.cursor = len(self.match.log)
        if f not in self.followers:
            self.followers.add(f)
            self.opened.count += 1

    def unfollow(self, f: Follower) -> None:
        """Forgets a follower whose stream has closed."""
        if f in self.followers:
            self.followers.discard(f)
            self.opened.count -= 1
        self._unhold(f)

    def expire(self) -> None:
        """Ends every stream still open, the server no longer holding the match (its
        hold is over): each is stopped, and its call ended through its ``Ending``.

        Why: after the end every stream is woken to send it and close, so one still
        open waits in a write its client does not read, and would keep the match in
        memory for as long as the connection lives."""
        message = (
            f"match {self.match.id!r} has ended and is no longer held by this server; "
            f"its record is in Spectate.GetRecord"
        )
        for f in list(self.followers):
            f.stop()
            if f.ending is not None:
                f.ending(message)

    # -- holds -----------------------------------------------------------------------

    def hold(self, f: Follower) -> None:
        """Wakes a follower at most its hold from now, or from when it was first held
        since it was last woken (sooner if something urgent for it comes first)."""
        now = self.clock.now()
        held = self._held.get(f.hold)
        if held is None:
            held = self._held[f.hold] = (self._release_at(now + f.hold, f.hold), {})
        held[1].setdefault(f, now)

    def _release_at(self, when: float, hold: float) -> Timer:
        return self.clock.call_at(when, functools.partial(self._release, hold))

    def _release(self, hold: float) -> None:
        """Wakes the followers whose hold is over; the timer waits on for the others.

        One timer per hold, not per follower: the seats that answered wait for their
        next request together, each for its own hold (a timer that woke every one at
        the first one's time would send a message of its own to each seat held for
        less, several times a second in a busy match)."""
        _, held = self._held.pop(hold, (None, {}))
        now = self.clock.now()
        due = [f for f, since in held.items() if since + hold <= now + HOLD_SLACK]
        for f in due:
            del held[f]
            f.wake.set()
        if held:
            self._held[hold] = (self._release_at(min(held.values()) + hold, hold), held)

    def _unhold(self, f: Follower) -> None:
        held = self._held.get(f.hold)
        if held is not None:
            held[1].pop(f, None)

    def end_holds(self) -> None:
        """Cancels every hold's timer: the match's end wakes every follower."""
        for timer, _ in self._held.values():
            timer.cancel()
        self._held.clear()

    # -- the stream loop -------------------------------------------------------------

    async def stream(
        self, follower: Follower, after: int, render: Render[T], pace: float = 0.0
    ) -> AsyncGenerator[T, None]:
        """Yields ``render`` of what ``follower``'s viewer receives: first the snapshot
        resuming after sequence ``after`` (with the end, if the match has ended), then,
        each time the follower is woken, every pending item (and reply) as one batch,
        until the match's end has been sent or the follower is stopped. ``pace``:
        seconds to wait after each wake before the next batch (a bound on the rate)."""
        match = self.match
        viewer = follower.viewer
        # The snapshot shows only what is committed (server.db.journal): wait for the
        # inputs still being written.
        await self.caught_up()
        follower.ending = ending.get()
        self._open(follower)
        try:
            now = self.clock.now()
            first: list[visibility.Item | bytes] = [visibility.snapshot(match, viewer, after)]
            if match.ended is not None:
                first.append(visibility.final(match, match.ended, viewer))
                yield render(first, now)
                return
            yield render(first, now)
            entries = match.log
            replies = follower.replies
            while True:
                follower.wake.clear()
                pending: list[visibility.Item | bytes] = []
                done = False
                now = self.clock.now()
                while follower.cursor < self.visible or replies:
                    if replies is not None and replies.due(follower.cursor, self.visible):
                        pending.append(replies.take())
                        continue
                    if follower.cursor >= self.visible:
                        break  # a reply waits for its answer to be committed
                    entry = entries[follower.cursor]
                    follower.cursor += 1
                    item = visibility.item(match, entry, viewer)
                    if item is not None:
                        pending.append(item)
                    done = done or isinstance(entry, Ended)
                if pending:
                    yield render(pending, now)
                if done:
                    return
                await follower.wake.wait()
                if follower.stopped:
                    return
                if pace:
                    await asyncio.sleep(pace)
        finally:
            self.unfollow(follower)


def encoded(match: Match) -> Render[bytes]:
    """Returns the render of a gRPC stream of ``match``: a batch as the bytes of one
    ``SeatEvents`` message (replies are encoded already)."""

    def render(batch: Batch, now: float) -> bytes:
        return b"".join(
            part if isinstance(part, bytes) else wire.stream_entry(part, match, now)
            for part in batch
        )

    return render


def messages(streams: Streams, follower: Follower, after: int) -> AsyncIterator[bytes]:
    """Returns the encoded ``SeatEvents`` messages of ``follower``'s stream (see
    :meth:`Streams.stream`)."""
    return streams.stream(follower, after, encoded(streams.match))
