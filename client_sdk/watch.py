"""Following a live match in the terminal (``mammamia watch --server ADDR MATCH``).

Spectate.Watch streams what anyone may see of a match (R-VIEW-1): a spectator
snapshot with the events so far, then each numbered event as it happens, and
``match_ended`` with the final view. The events arrive as ``mammamia.Event`` values
(``client_sdk.wire``) and are printed with the lines of ``mammamia show``, which
describes a game from its public events alone. A dropped stream is resumed after the
last event printed; an unknown match or a server that does not answer is one line
on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from mammamia import Event, MammaMiaError, View
from mammamia.cards import (
    BOMBASTICA,
    DEALT_INGREDIENTS,
    KIND_INDEX,
    MINIMALE,
    MONOTONI,
    ORDERS,
    ingredient_deck,
)
from mammamia.narrator import Narrator
from mammamia.show import log_lines
from mammamia.state import _minimale_kinds

if TYPE_CHECKING:
    import grpc

    from . import wire

RESUME_FOR: Final = 10.0
"""Seconds to keep trying to resume a stream that dropped after it had started."""


class WatchError(MammaMiaError):
    """The match cannot be watched (unknown match, server unreachable)."""


def register_watch(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``mammamia watch``."""
    p = sub.add_parser(
        "watch",
        help="follow a live match in the terminal, as a spectator",
        description="Print MATCH as it is played, one line per public event, the way "
        "`mammamia show` prints a game record: first the events so far, then each one as "
        "it happens, and the final ranking once the match ends. Shows only what a "
        "spectator may see (never a hand). An unknown match or an unreachable server "
        "exits 2 with one line on stderr.",
    )
    p.add_argument("match", metavar="MATCH", help="the match id (`mammamia match list`)")
    p.add_argument(
        "--server",
        default=os.environ.get("MAMMAMIA_SERVER", "127.0.0.1:50051"),
        metavar="ADDR",
        help="server address host:port (MAMMAMIA_SERVER, default 127.0.0.1:50051)",
    )
    p.add_argument(
        "--tls-ca",
        default=os.environ.get("MAMMAMIA_TLS_CA"),
        metavar="FILE",
        help="connect with TLS, trusting this PEM CA (MAMMAMIA_TLS_CA)",
    )
    p.set_defaults(func=_cmd_watch)


def _cmd_watch(args: argparse.Namespace) -> int:
    import grpc

    credentials = None
    if args.tls_ca:
        try:
            with open(args.tls_ca, "rb") as f:
                credentials = grpc.ssl_channel_credentials(f.read())
        except OSError as e:
            raise WatchError(f"cannot read --tls-ca {args.tls_ca!r}: {e.strerror}") from None
    for line in watch(args.server, args.match, credentials):
        print(line, flush=True)
    return 0


def watch(
    server: str, match_id: str, credentials: grpc.ChannelCredentials | None = None
) -> Iterator[str]:
    """Yields the lines of a match as it is played, to its end; raises WatchError."""
    import grpc

    from mammamia_pb import arena_pb2_grpc as rpc

    from . import wire

    printer: _Printer | None = None
    after = 0
    dropped: float | None = None
    while True:
        channel = (
            grpc.secure_channel(server, credentials)
            if credentials is not None
            else grpc.insecure_channel(server)
        )
        try:
            with channel:
                stream = rpc.SpectateStub(channel).Watch(wire.watch_request(match_id, after))
                for msg in stream:
                    dropped = None
                    for item in wire.incomings(msg):
                        if isinstance(item, wire.Snapshot):
                            if item.status == "waiting":
                                # The game is dealt when the match starts; a second
                                # snapshot brings it then.
                                after = max(after, item.sequence)
                                continue
                            if printer is None:
                                printer = _Printer(item.view)
                                yield printer.header()
                            for happened in item.history:
                                yield from printer.event(happened.event)
                            after = max(after, item.sequence)
                        elif printer is None:
                            continue
                        elif isinstance(item, wire.Happened):
                            after = item.sequence
                            yield from printer.event(item.event)
                        elif isinstance(item, wire.Defaulted):
                            after = item.sequence
                            yield printer.defaulted(item)
                        elif isinstance(item, wire.Ended):
                            yield from printer.ended(item)
                            return
        except grpc.RpcError as e:
            code = e.code() if isinstance(e, grpc.Call) else None
            if code == grpc.StatusCode.NOT_FOUND:
                raise WatchError(
                    f"no match {match_id!r} on {server} (it never existed, or "
                    f"has ended and is no longer held)"
                ) from None
            if printer is None or code not in (
                grpc.StatusCode.UNAVAILABLE,
                grpc.StatusCode.DEADLINE_EXCEEDED,
            ):
                name = code.name if code is not None else "ERROR"
                details = e.details() if isinstance(e, grpc.Call) else str(e)
                raise WatchError(
                    f"cannot watch {match_id!r} on {server}: {name}: {details}"
                    + (
                        f": is the server running at {server}?"
                        if code == grpc.StatusCode.UNAVAILABLE
                        else ""
                    )
                ) from None
        now = time.monotonic()
        dropped = dropped or now
        if now - dropped > RESUME_FOR:
            raise WatchError(
                f"lost the match {match_id!r}: {server} stopped answering: "
                f"is the server running at {server}?"
            )
        time.sleep(0.5)


class _Table:
    """What the narrator reads of a game's state (``mammamia.narrator.Game``), kept from
    public events: the colours, the order cards' owners and the number of cards in the
    supply."""

    def __init__(self, view: View) -> None:
        self.players = view.players
        self.colours = view.colours
        self._seat_of = {c: i for i, c in enumerate(view.colours)}
        self.supply_size = (
            len(ingredient_deck(view.players)) - view.players * DEALT_INGREDIENTS + 1
        )  # with the Mamma Mia! card (R-SETUP-4)
        self.used = 0
        self.holder = False

    @property
    def supply(self) -> Sequence[int]:
        return range(self.supply_size)

    def owner(self, order: str) -> int:
        return self._seat_of[ORDERS[order].colour]


class _Printer:
    """Turns public events into the lines of ``mammamia show``."""

    def __init__(self, view: View) -> None:
        self.table = _Table(view)
        self.log = Narrator(self.table)
        self.over = False

    def header(self) -> str:
        return self.log.header()

    def event(self, e: Event) -> Iterator[str]:
        """Yields the lines of one public event."""
        raw = self._raw(e)
        if raw is not None:
            yield from log_lines(self.log.lines([raw]))

    def _raw(self, e: Event) -> tuple[Any, ...] | None:
        """Returns the engine's tuple for an event (as show reads it), keeping count of
        the supply."""
        t = self.table
        if e.kind == "round_started":
            if e.round > 1:
                # R-NEXT-2: the used pile, the Mamma Mia! card and the supply left.
                t.supply_size += t.used + (1 if t.holder else 0)
                t.used, t.holder = 0, False
            return ("round", e.round, e.seat)
        if e.kind == "turn":
            if e.draw == "supply":
                t.supply_size -= e.drawn
            if e.mamma_mia:
                t.supply_size -= 1
                t.holder = True
            return ("turn", e.seat, e.ingredient, e.count, e.order, e.draw, e.drawn, e.mamma_mia)
        if e.kind == "round_ended":
            return ("round_end", e.round, e.stalemate)
        if e.kind == "baked":
            assert e.order is not None
            from_table = self._from_table(e.order, e.ingredient, e.hand)
            t.used += sum(from_table) + sum(e.hand or ())
            card = ORDERS[e.order]
            # The record names the Minimale's kind only when its owner had a choice.
            named = (
                e.ingredient
                if card.kind != MINIMALE
                or len(_minimale_kinds(self._table_at(e.order), card.personal)) > 1
                else None
            )
            return ("bake", e.seat, e.order, named, e.hand, e.auto, from_table)
        if e.kind == "failed":
            return ("fail", e.seat, e.order, e.declined)
        if e.kind == "game_over":
            self.over = True
            return ("over",)
        return None

    def _from_table(
        self, order: str, ingredient: str | None, hand: Sequence[int] | None
    ) -> tuple[int, ...]:
        """Returns the cards a baked order took from the table (R-RES-4..7)."""
        card = ORDERS[order]
        have = hand or (0, 0, 0, 0, 0)
        if card.kind == BOMBASTICA:
            return tuple(self._table_at(order))
        if card.kind in (MINIMALE, MONOTONI):
            if ingredient is not None and ingredient in KIND_INDEX:
                k = KIND_INDEX[ingredient]
            else:
                kinds = _minimale_kinds(self._table_at(order), card.personal)
                k = kinds[0] if kinds else (card.personal + 1) % 5
            need = [0, 0, 0, 0, 0]
            need[card.personal] = 1
            need[k] = 3 if card.kind == MINIMALE else 6
        else:
            need = list(card.need)
        return tuple(max(0, n - h) for n, h in zip(need, have, strict=True))

    def _table_at(self, order: str) -> list[int]:
        """Returns the table as ``order`` meets it (the log's table, revealed up to it)."""
        log = self.log
        table = list(log.table)
        for card in log.oven[log.next :]:
            if card == order:
                break
            table[KIND_INDEX[card]] += 1
        return table

    def defaulted(self, d: wire.Defaulted) -> str:
        text = f"  ({self.log.who(d.seat)} ran out of time: the server answered for it"
        return text + (", and plays for it from now on)" if d.autopilot else ")")

    def ended(self, ended: wire.Ended) -> Iterator[str]:
        """Yields the closing lines: the ranking and the winners, as ``show`` ends."""
        if ended.status != "finished":
            yield f"(the match was aborted: {ended.reason or 'no reason given'})"
            return
        if not self.over:
            yield from self.event(Event("game_over"))
        who = self.log.who
        seats = ended.view.seats if ended.view is not None else ()
        players = self.table.players
        ranks = ended.ranks or tuple(1 for _ in range(players))
        for seat in sorted(range(players), key=lambda s: (ranks[s], s)):
            pizzas = ended.delivered[seat] if seat < len(ended.delivered) else 0
            text = f"#{ranks[seat]} {who(seat)}: {pizzas} pizza{'s' * (pizzas != 1)} delivered"
            if seat < len(seats):
                ings = seats[seat].ingredients_in_hand
                text += f", {ings} ingredient{'s' * (ings != 1)} in hand"
            yield text
        winners = ended.winners
        yield f"Winner{'s' * (len(winners) > 1)}: " + " and ".join(who(s) for s in winners)
