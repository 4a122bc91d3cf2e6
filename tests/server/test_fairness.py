"""Verifiable deals: a match commits to its seed before anyone joins, deals its game
from that seed and the seats' client seeds when it starts, reveals them at the end,
and its record verifies (``mammamia verify``); an edited record does not; the seed
leaves the server neither in a message nor in a log line before the end."""

from __future__ import annotations

import asyncio
import json
import random
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from mammamia import record as rec
from mammamia.fairness import commitment, game_seed, verify
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.db.matches import Storage
from server.runners import Runners

from .client import MAMMAMIA, create_match, seat_metadata
from .clocks import ManualClock

if TYPE_CHECKING:
    from tests.conftest import RunningServer
from collections.abc import Callable

TIMEOUT_S = 60


def _played(
    tmp_path: Path, client_seeds: dict[int, str], players: int = 3, seed: int | None = None
) -> str:
    """Returns the stored record of a match played in-process to its end, the seats
    giving ``client_seeds`` at Join and answering with seeded random options."""

    async def go() -> str:
        storage = Storage(tmp_path / "arena.db")
        try:
            runners = Runners(storage, clock=ManualClock())
            runner = runners.create_match(players, seed=seed)
            if seed is None:
                # A fixed server seed, so that the game (and what the edits below
                # change) is the same on every run.
                fair = runner.match.fairness
                assert fair is not None
                fair.server_seed = "5eed" * 16
            for seat in range(players):
                runner.join(seat, None, client_seeds.get(seat))
            rng = random.Random(7)
            while (d := runner.match.decision) is not None:
                runner.answer(d.seat, d.id, rng.randrange(len(d.options)), None)
            await asyncio.wait_for(runner.result(), 30)
            record = storage.record(runner.id)
            assert record is not None
            return record
        finally:
            storage.close()

    return asyncio.run(go())


def test_a_record_verifies_and_its_seed_comes_from_the_revealed_seeds(tmp_path: Path) -> None:
    text = _played(tmp_path, {0: "ann's entropy", 2: "cy"})
    record = rec.loads(text)
    fair = record.meta["fairness"]
    assert fair["client_seeds"] == ["ann's entropy", "", "cy"]
    assert re.fullmatch(r"[0-9a-f]{64}", fair["server_seed"])
    assert fair["commitment"] == commitment(record.meta["match"], fair["server_seed"])
    assert record.seed == game_seed(fair["server_seed"], fair["client_seeds"])
    assert verify(record) == []
    # The client seeds count: without them the same server seed deals another game.
    alone = game_seed(fair["server_seed"], ["", "", ""])
    assert alone != record.seed


def test_an_organisers_seed_is_played_and_verifies(tmp_path: Path) -> None:
    record = rec.loads(_played(tmp_path, {1: "ignored"}, players=2, seed=1234))
    assert record.seed == 1234
    assert record.meta["fairness"]["source"] == "organiser"
    assert verify(record) == []


def _verify(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MAMMAMIA), "verify", str(path)], capture_output=True, text=True, timeout=TIMEOUT_S
    )


def test_mammamia_verify_refuses_an_edited_record(tmp_path: Path) -> None:
    data = json.loads(_played(tmp_path, {0: "x"}, players=4))
    assert data["reshuffles"], "a game that reaches round 2 reshuffles its supply"

    def edited(name: str, change: Callable[[Any], None]) -> Path:
        copy = json.loads(json.dumps(data))
        change(copy)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(copy))
        return path

    good = edited("good", lambda d: None)
    ok = _verify(good)
    assert ok.returncode == 0 and ok.stdout.count("\n") == 1 and "verified" in ok.stdout
    # The record says who won, as its replay does.
    over = rec.loads(json.dumps(data)).replay()
    assert data["meta"]["ranks"] == over.ranking() and "ranks" in ok.stdout
    assert data["meta"]["scores"] == [list(s) for s in over.scores()]

    def swap_hand(d: Any) -> None:
        # Two cards that differ, one from each of two hands: the deal changes.
        first, second = d["deal"]["hands"][0], d["deal"]["hands"][1]
        i, j = next(
            (i, j) for i in range(len(first)) for j in range(len(second)) if first[i] != second[j]
        )
        first[i], second[j] = second[j], first[i]

    def swap_reshuffle(d: Any) -> None:
        r = d["reshuffles"][0]
        other = next(i for i, card in enumerate(r) if card != r[0])
        r[0], r[other] = r[other], r[0]

    def client_seed(d: Any) -> None:
        d["meta"]["fairness"]["client_seeds"][0] = "y"

    def commit(d: Any) -> None:
        c = d["meta"]["fairness"]["commitment"]
        d["meta"]["fairness"]["commitment"] = ("0" if c[0] != "0" else "1") + c[1:]

    cases = {
        "seed": (lambda d: d.update(seed=d["seed"] ^ 1), "seed"),
        "deal": (swap_hand, "deal"),
        "reshuffle": (swap_reshuffle, "reshuffle"),
        "client-seed": (client_seed, "seed"),
        "commitment": (commit, "commitment"),
        "ranks": (lambda d: d["meta"]["ranks"].__setitem__(0, 5), "meta.ranks"),
        "scores": (lambda d: d["meta"]["scores"][0].__setitem__(0, 9), "meta.scores"),
    }
    for name, (change, named) in cases.items():
        bad = _verify(edited(name, change))
        assert bad.returncode == 2, (name, bad.stdout, bad.stderr)
        assert bad.stderr.count("\n") == 1 and named in bad.stderr, (name, bad.stderr)


def test_the_seed_is_committed_first_and_revealed_only_at_the_end(server: RunningServer) -> None:
    async def go() -> tuple[pb.CreateMatchResponse, list[bytes], pb.MatchEnded, list[pb.Snapshot]]:
        async with grpc.aio.insecure_channel(server.address) as channel:
            # No seat answers: short deadlines put both on autopilot quickly, and the
            # server plays the match to its end.
            created = await create_match(
                channel, server.organiser_key, 2, time_control=pb.TimeControl(deadline_ms=20)
            )
            stub = pb_grpc.SeatStub(channel)
            seen: list[bytes] = [created.SerializeToString()]
            tokens = created.seat_tokens
            joined = await stub.Join(
                pb.JoinRequest(name="a", client_seed="mine"), metadata=seat_metadata(tokens[0])
            )
            seen.append(joined.SerializeToString())
            # Seat 0 watches from before the start: a second snapshot deals its hand.
            stream = stub.Observe(pb.ObserveRequest(), metadata=seat_metadata(tokens[0]))
            snapshots: list[pb.Snapshot] = []
            first = await stream.read()
            assert isinstance(first, pb.SeatEvents)
            seen.append(first.SerializeToString())
            snapshots.append(first.events[0].snapshot)
            await stub.Join(pb.JoinRequest(name="b"), metadata=seat_metadata(tokens[1]))
            ended = None
            async with asyncio.timeout(TIMEOUT_S):
                while (message := await stream.read()) is not grpc.aio.EOF:
                    assert isinstance(message, pb.SeatEvents)
                    for event in message.events:
                        which = event.WhichOneof("event")
                        if which == "match_ended":
                            ended = event.match_ended
                            break
                        seen.append(event.SerializeToString())
                        if which == "snapshot":
                            snapshots.append(event.snapshot)
                    if ended is not None:
                        break
            assert ended is not None
            return created, seen, ended, snapshots

    created, seen, ended, snapshots = asyncio.run(go())
    assert re.fullmatch(r"[0-9a-f]{64}", created.commitment)
    assert ended.client_seeds == ["mine", ""]
    assert commitment(created.match_id, ended.server_seed) == created.commitment
    assert ended.game_seed == game_seed(ended.server_seed, ["mine", ""])
    assert all(s.commitment == created.commitment for s in snapshots)
    waiting, started = snapshots[0], snapshots[1]
    assert waiting.status == pb.MATCH_STATUS_WAITING

    def cards(view: pb.View) -> int:
        h = view.hand
        return h.salami + h.pineapple + h.mushroom + h.pepper + h.olive + len(view.hand_orders)

    assert cards(waiting.view) == 0 and not waiting.view.HasField("to_act")
    assert started.status == pb.MATCH_STATUS_RUNNING and cards(started.view) > 0
    # Nothing before the end carried the seed, and no log line ever did.
    secret = ended.server_seed.encode()
    assert not any(secret in message for message in seen)
    logs = server.logs()
    assert ended.server_seed not in logs and str(ended.game_seed) not in logs
