"""Non-interference (R-VIEW-4): two games that differ only in what seat k cannot see
give seat k (and spectators) byte-identical messages.

For every player count (2 to 5) and every seat k, game B is game A with one change
the rules hide from seat k (R-VIEW-2, R-VIEW-3), of each kind:

- ``supply``: two cards of the round-1 supply swapped, both drawn by another seat j
  (in different turns, so that j notices);
- ``reshuffle``: the same in the supply of round 2 or 3 (a later reshuffle);
- ``other_hand``: a card of another seat j's dealt hand swapped with a supply card
  that j draws;
- ``other_waiter``: two orders of another seat j's waiter swapped, both drawn by j
  in different draws;
- ``own_waiter``: two orders of seat k's own waiter swapped where k cannot tell
  their order: drawn in the same draw, or never drawn.

Game A is a random game in which every seat is asked at least one resolution
decision (R-RES-8), so owners' decisions are among the messages compared. Both
games are played on a real server (in this process, so it can be handed the two
deals) with the same decisions, and every message seat k and a spectator receive
is compared byte for byte, apart from what comes from the clock and the match id, in
a form that does not depend on timing: event by event (however the server grouped
them into messages), a snapshot's history as the events it holds, every stream
opened before anyone answers.
Where the change is one another seat j can see, j's messages must differ, or the
test would prove nothing.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import random
from collections.abc import AsyncIterator, Iterator
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from mammamia import RecordError, Resolve, State, new_game, public_events, record_of
from mammamia.record import Record
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.app import create_server
from server.wire import action_message

from .client import seat_metadata

KINDS = ("supply", "reshuffle", "other_hand", "other_waiter", "own_waiter")
CASES = [(n, k, kind) for n in range(2, 6) for k in range(n) for kind in KINDS]
MAMMA_MIA = "mamma-mia"


@dataclass(frozen=True)
class Draw:
    """Cards one turn drew: positions in that round's supply (top first) or in the
    seat's dealt waiter (orders that went back under it are not counted)."""

    seat: int
    turn: int
    source: str
    round: int
    positions: tuple[int, ...]


@dataclass(frozen=True)
class Variant:
    """Game B, and the one seat that can see the change (None: nobody)."""

    record: Record
    sees: int | None


def _random_game(players: int, seed: int) -> Record:
    state = new_game(players, seed)
    rng = random.Random(seed)
    actions = []
    while not state.is_over:
        seat = state.to_act
        assert seat is not None
        action = rng.choice(state.legal_actions())
        actions.append((seat, action))
        state.apply(action)
    return record_of(state, actions, seed=seed)


def _draws(record: Record) -> list[Draw]:
    """Returns every draw of the game, in order (the setup's waiter draw as turn -1)."""
    state = record.start()
    out = [Draw(s, -1, "waiter", 1, (0,)) for s in range(record.players)]
    supply_top: dict[int, int] = {}
    waiter_top = [1] * record.players
    for turn, (_, action) in enumerate(record.actions):
        rnd = state.round
        seen = len(public_events(state))
        state.apply(action)
        for e in public_events(state, seen):
            if e.kind != "turn" or e.draw is None or e.seat is None:
                continue
            if e.draw == "supply":
                top = supply_top.get(rnd, 0)
                count = e.drawn + e.mamma_mia  # the Mamma Mia! card and its replacement
                supply_top[rnd] = top + count
                out.append(Draw(e.seat, turn, "supply", rnd, tuple(range(top, top + count))))
            else:
                top = waiter_top[e.seat]
                waiter_top[e.seat] = top + e.drawn
                out.append(
                    Draw(
                        e.seat,
                        turn,
                        "waiter",
                        rnd,
                        tuple(p for p in range(top, top + e.drawn) if p < 8),
                    )
                )
    return out


def _supply_of(deal: dict[str, Any], reshuffles: list[list[str]], rnd: int) -> list[str]:
    return deal["supply"] if rnd == 1 else reshuffles[rnd - 2]


def _replays(record: Record, deal: dict[str, Any], reshuffles: list[list[str]]) -> Record | None:
    """Returns the record with another deal/reshuffles if the same decisions replay."""
    variant = Record(
        players=record.players,
        colours=record.colours,
        seed=record.seed,
        first_player=record.first_player,
        deal=deal,
        reshuffles=reshuffles,
        actions=record.actions,
    )
    try:
        variant.replay()
    except RecordError:
        return None
    return variant


def _apart(a: Draw, b: Draw) -> Iterator[tuple[int, int]]:
    """Yields pairs of positions from two different draws."""
    if a.turn != b.turn:
        yield from itertools.product(a.positions, b.positions)


def _candidates(
    record: Record, draws: list[Draw], kind: str, k: int
) -> Iterator[tuple[int | None, dict[str, Any], list[list[str]]]]:
    """Yields (seat that sees it, deal, reshuffles) for changes hidden from seat k."""
    assert record.deal is not None and record.reshuffles is not None
    others = [(k + d) % record.players for d in range(1, record.players)]
    if kind in ("supply", "reshuffle"):
        rounds = (1,) if kind == "supply" else (2, 3)
        for j, rnd in itertools.product(others, rounds):
            mine = [d for d in draws if d.seat == j and d.source == "supply" and d.round == rnd]
            for a, b in itertools.combinations(mine, 2):
                for p, q in _apart(a, b):
                    deal, reshuffles = deepcopy(record.deal), deepcopy(record.reshuffles)
                    cards = _supply_of(deal, reshuffles, rnd)
                    if cards[p] != cards[q] and MAMMA_MIA not in (cards[p], cards[q]):
                        cards[p], cards[q] = cards[q], cards[p]
                        yield j, deal, reshuffles
    elif kind == "other_hand":
        for j in others:
            for d in draws:
                if d.seat != j or d.source != "supply" or d.round != 1:
                    continue
                for p, h in itertools.product(d.positions, range(6)):
                    deal, reshuffles = deepcopy(record.deal), deepcopy(record.reshuffles)
                    hand, supply = deal["hands"][j], deal["supply"]
                    if hand[h] != supply[p] and supply[p] != MAMMA_MIA:
                        hand[h], supply[p] = supply[p], hand[h]
                        yield j, deal, reshuffles
    elif kind == "other_waiter":
        for j in others:
            mine = [d for d in draws if d.seat == j and d.source == "waiter"]
            for a, b in itertools.combinations(mine, 2):
                for p, q in _apart(a, b):
                    deal, reshuffles = deepcopy(record.deal), deepcopy(record.reshuffles)
                    w = deal["waiters"][j]
                    w[p], w[q] = w[q], w[p]
                    yield j, deal, reshuffles
    else:
        mine = [d for d in draws if d.seat == k and d.source == "waiter"]
        never = [p for p in range(8) if not any(p in d.positions for d in mine)]
        pairs = [pq for d in mine for pq in itertools.combinations(d.positions, 2)]
        pairs += list(itertools.combinations(never, 2))
        for p, q in pairs:
            deal, reshuffles = deepcopy(record.deal), deepcopy(record.reshuffles)
            w = deal["waiters"][k]
            w[p], w[q] = w[q], w[p]
            yield None, deal, reshuffles


def _variant(record: Record, kind: str, k: int) -> Variant | None:
    """Returns game B of this kind for seat k, or None when game A offers none."""
    draws = _draws(record)
    for sees, deal, reshuffles in _candidates(record, draws, kind, k):
        variant = _replays(record, deal, reshuffles)
        if variant is not None:
            return Variant(variant, sees)
    return None


@functools.cache
def _game(players: int) -> tuple[Record, dict[tuple[int, str], Variant]]:
    """Returns game A for this player count, with a variant for every seat and kind:
    the first random game in which every seat is asked a resolution decision and
    every variant exists."""
    for seed in range(1, 2000):
        record = _random_game(players, seed)
        asked = {seat for seat, action in record.actions if isinstance(action, Resolve)}
        if asked != set(range(players)):
            continue
        variants = {}
        for k, kind in itertools.product(range(players), KINDS):
            v = _variant(record, kind, k)
            if v is None:
                break
            variants[k, kind] = v
        else:
            return record, variants
    raise AssertionError(f"no {players}-player game offers every hidden change")


def _timeless(request: pb.DecisionRequest) -> None:
    for name in ("deadline", "default_at"):
        request.ClearField(name)
    request.deadline_ms = request.default_in_ms = request.time_bank_ms = 0


def _normalised(event: pb.SeatEvent) -> list[bytes]:
    """Returns the event as received, without what comes from the clock or the match id,
    and the history its snapshot carries as the events they are: a form that does not
    depend on how the server grouped events into messages."""
    out = []
    if event.HasField("decision"):
        _timeless(event.decision)
    if event.HasField("snapshot"):
        snapshot = event.snapshot
        snapshot.match_id = ""
        if snapshot.HasField("decision"):
            _timeless(snapshot.decision)
        out = [e.SerializeToString() for e in snapshot.history]
        snapshot.ClearField("history")
    return [event.SerializeToString(), *out]


async def _play(
    stub: pb_grpc.SeatAsyncStub,
    token: str,
    script: list[tuple[int, Any]],
    cursor: list[int],
    received: list[bytes],
    ready: asyncio.Barrier,
) -> None:
    """Plays one seat by the script, once every stream has its snapshot."""
    queue: asyncio.Queue[pb.PlayRequest] = asyncio.Queue()
    queue.put_nowait(pb.PlayRequest(observe=pb.ObserveRequest()))

    async def requests() -> AsyncIterator[pb.PlayRequest]:
        while True:
            yield await queue.get()

    def answer(request: pb.DecisionRequest) -> None:
        _, action = script[cursor[0]]
        cursor[0] += 1
        index = list(request.options).index(action_message(action))
        queue.put_nowait(
            pb.PlayRequest(act=pb.ActRequest(decision_id=request.decision_id, option=index))
        )

    call = stub.Play(requests(), metadata=seat_metadata(token))
    first = True
    async for message in call:
        if first:
            # Nobody answers before every stream has opened: each snapshot then shows
            # the same moment of the game, whatever the machine's speed.
            await ready.wait()
            first = False
        for event in message.events:
            if event.HasField("snapshot") and event.snapshot.HasField("decision"):
                answer(event.snapshot.decision)
            elif event.HasField("decision"):
                answer(event.decision)
            received.extend(_normalised(event))
        if message.events[-1].HasField("match_ended"):
            break
    call.cancel()


async def _watch(
    channel: grpc.aio.Channel, match_id: str, received: list[bytes], ready: asyncio.Barrier
) -> None:
    first = True
    async for message in pb_grpc.SpectateStub(channel).Watch(pb.WatchRequest(match_id=match_id)):
        if first:
            await ready.wait()
            first = False
        for event in message.events:
            received.extend(_normalised(event))


async def _messages(records: list[Record], tmp_path: Path) -> list[list[list[bytes]]]:
    """Returns, per game, the events each seat received, and then the spectator's."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    arena, port = await create_server(
        "127.0.0.1:0", db_path=tmp_path / "arena.db", organiser_key="k"
    )
    await arena.start()
    out = []
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.SeatStub(channel)
            for record in records:
                game = State.new(
                    record.players,
                    record.seed,
                    record.colours,
                    record.first_player,
                    record.deal,
                    record.reshuffles,
                )
                runner = arena.runners.create_match(
                    record.players, seed=record.seed, game=game, deadline_ms=60_000
                )
                # Every seat joins first: the match starts, and its first decision waits.
                for token in runner.tokens:
                    await stub.Join(pb.JoinRequest(), metadata=seat_metadata(token))
                received: list[list[bytes]] = [[] for _ in range(record.players + 1)]
                cursor = [0]
                ready = asyncio.Barrier(record.players + 1)
                async with asyncio.timeout(60):
                    await asyncio.gather(
                        _watch(channel, runner.id, received[-1], ready),
                        *(
                            _play(stub, token, record.actions, cursor, r, ready)
                            for token, r in zip(runner.tokens, received[:-1], strict=True)
                        ),
                    )
                result = await runner.result()
                assert result.status == "finished"
                assert cursor[0] == len(record.actions)
                out.append(received)
    finally:
        await arena.drain(grace=1)
    return out


@pytest.mark.parametrize(
    ("players", "k", "kind"), CASES, ids=[f"{n}p-seat{k}-{kind}" for n, k, kind in CASES]
)
def test_seat_k_cannot_tell_the_games_apart(
    players: int, k: int, kind: str, tmp_path: Path
) -> None:
    a, variants = _game(players)
    b = variants[k, kind]
    assert b.sees != k
    assert b.record.deal != a.deal or b.record.reshuffles != a.reshuffles

    game_a, game_b = asyncio.run(_messages([a, b.record], tmp_path))
    # Seat k was asked resolution decisions, and its messages are the same bytes.
    assert any(isinstance(action, Resolve) for seat, action in a.actions if seat == k)
    assert len(game_a[k]) > 10
    assert game_a[k] == game_b[k]
    assert game_a[-1] == game_b[-1]  # the spectators' too
    if b.sees is not None:
        assert game_a[b.sees] != game_b[b.sees], (
            "the change is visible to nobody: the test would prove nothing"
        )
