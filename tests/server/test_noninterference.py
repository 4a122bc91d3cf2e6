"""Non-interference (R-VIEW-4): two games that differ only in what seat k cannot see
give seat k (and spectators) byte-identical messages.

Game B is game A with changes hidden from seat k by the rules: two cards of the
supply swapped where both are drawn by other seats, and two orders swapped in another
seat's waiter that it never plays. Both games are played on a real server (in this
process, so it can be handed the two deals) with the same decisions, and every
message seat k receives is compared byte for byte, apart from what comes from the
clock and the match id. The other seats' messages must differ, or the test proves
nothing.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncIterator
from copy import deepcopy

import grpc

from mammamia import RecordError, State, new_game, public_events, record_of
from mammamia.record import Record
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.app import create_server
from server.wire import action_message

from .client import seat_metadata

K = 0
PLAYERS = 3


def _random_game(seed: int) -> Record:
    state = new_game(PLAYERS, seed)
    rng = random.Random(seed)
    actions = []
    while not state.is_over:
        seat = state.to_act
        action = rng.choice(state.legal_actions())
        actions.append((seat, action))
        state.apply(action)
    return record_of(state, actions, seed=seed)


def _drawn_by(record: Record) -> dict[int, int]:
    """Returns, for each round-1 supply position (top first) that was drawn, the seat
    that drew it."""
    state = record.start()
    out: dict[int, int] = {}
    top = 0
    for seat, action in record.actions:
        if state.round > 1:
            break
        seen = len(public_events(state))
        state.apply(action)
        for event in public_events(state, seen):
            if event.kind == "turn" and event.draw == "supply":
                drawn = event.drawn + event.mamma_mia    # plus the Mamma Mia! card
                for pos in range(top, top + drawn):
                    out[pos] = seat
                top += drawn
    return out


def _hidden_variant(record: Record) -> Record | None:
    """Returns game B for game A, or None when this game offers no hidden change."""
    assert record.deal is not None
    drawn = _drawn_by(record)
    supply = record.deal["supply"]
    others = [p for p, s in drawn.items() if s != K and supply[p] != "mamma-mia"]
    played = {a.order for _, a in record.actions if getattr(a, "order", None)}
    for p, q in itertools.combinations(others, 2):
        if supply[p] == supply[q]:
            continue
        deal = deepcopy(record.deal)
        deal["supply"][p], deal["supply"][q] = supply[q], supply[p]
        j = (K + 1) % PLAYERS
        unplayed = [i for i, o in enumerate(deal["waiters"][j]) if o not in played and i > 0]
        if len(unplayed) >= 2:
            w = deal["waiters"][j]
            w[unplayed[0]], w[unplayed[-1]] = w[unplayed[-1]], w[unplayed[0]]
        variant = Record(players=record.players, colours=record.colours, seed=record.seed,
                         first_player=record.first_player, deal=deal,
                         reshuffles=record.reshuffles, actions=record.actions)
        try:
            variant.replay()
        except RecordError:
            continue
        return variant
    return None


def _normalised(event: pb.SeatEvent) -> bytes:
    """Returns the event's bytes without what comes from the clock or the match id."""
    if event.HasField("decision"):
        event.decision.ClearField("deadline")
        event.decision.deadline_ms = 0
    if event.HasField("snapshot"):
        event.snapshot.match_id = ""
    return event.SerializeToString()


async def _play(stub: pb_grpc.SeatStub, token: str, script: list, cursor: list[int],
                received: list[bytes]) -> None:
    queue: asyncio.Queue[pb.PlayRequest] = asyncio.Queue()
    queue.put_nowait(pb.PlayRequest(observe=pb.ObserveRequest()))

    async def requests() -> AsyncIterator[pb.PlayRequest]:
        while True:
            yield await queue.get()

    call = stub.Play(requests(), metadata=seat_metadata(token))
    ended = False
    async for message in call:
        # Messages group events as the streams are scheduled; the events are compared.
        for event in message.events:
            received.append(_normalised(event))
            if event.HasField("decision"):
                _, action = script[cursor[0]]
                cursor[0] += 1
                index = list(event.decision.options).index(action_message(action))
                queue.put_nowait(pb.PlayRequest(act=pb.ActRequest(
                    decision_id=event.decision.decision_id, option=index)))
            ended = ended or event.HasField("match_ended")
        if ended:
            break
    call.cancel()


async def _watch(channel: grpc.aio.Channel, match_id: str, received: list[bytes]) -> None:
    async for message in pb_grpc.SpectateStub(channel).Watch(
            pb.WatchRequest(match_id=match_id)):
        received.extend(_normalised(event) for event in message.events)


async def _messages(records: list[Record], tmp_path) -> list[list[list[bytes]]]:
    """Returns, per game, the messages each seat received, and then the spectator's."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    arena, port = await create_server("127.0.0.1:0", db_path=tmp_path / "arena.db",
                                      organiser_key="k")
    await arena.start()
    out = []
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.SeatStub(channel)
            for record in records:
                game = State.new(record.players, record.seed, record.colours,
                                 record.first_player, record.deal, record.reshuffles)
                match = arena.host.create_match(record.players, seed=record.seed, game=game,
                                                deadline_ms=60_000)
                received: list[list[bytes]] = [[] for _ in range(record.players + 1)]
                cursor = [0]
                async with asyncio.timeout(60):
                    await asyncio.gather(
                        _watch(channel, match.id, received[-1]),
                        *(_play(stub, token, record.actions, cursor, r)
                          for token, r in zip(match.tokens, received[:-1], strict=True)))
                result = await match.result()
                assert result.status == "finished"
                assert cursor[0] == len(record.actions)
                out.append(received)
    finally:
        await arena.drain(grace=1)
    return out


def test_seat_k_cannot_tell_the_games_apart(tmp_path):
    pairs = []
    for seed in range(1, 200):
        a = _random_game(seed)
        b = _hidden_variant(a)
        if b is not None:
            pairs.append((a, b))
        if len(pairs) == 2:
            break
    assert pairs, "no game with a hidden change was found"
    for n, (a, b) in enumerate(pairs):
        game_a, game_b = asyncio.run(_messages([a, b], tmp_path / str(n)))
        assert len(game_a[K]) > 10
        assert game_a[K] == game_b[K]
        assert game_a[-1] == game_b[-1]             # the spectators' too
        assert any(x != y for j in range(PLAYERS) if j != K
                   for x, y in zip(game_a[j], game_b[j], strict=True)), \
            "the change is visible to nobody: the test would prove nothing"
