"""Durable matches: every input is written ahead, so a server killed mid-match and
started again on the same database resumes the match where it was, its seats come
back with the tokens they hold, the open decision is asked again with a fresh
deadline, and the match ends as it would have without the crash."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from mammamia.dump import state_dump
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.db.matches import Storage
from server.runners import Runners

from .client import MAMMAMIA, seat_metadata
from .clocks import START, ManualClock

if TYPE_CHECKING:
    from tests.conftest import RunningServer
from collections.abc import Callable

TIMEOUT_S = 60


def test_a_resumed_match_is_the_match_it_was_and_ends_the_same(tmp_path: Path) -> None:
    """Half a match on one runners, a "crash" (the runners is dropped without a drain),
    then a runners on the same file resumes it; played on the same way, it ends as the
    same match played without the crash."""

    async def play(runners: Runners, match_id: str, rng: random.Random, upto: int | None) -> None:
        runner = runners.matches[match_id]
        played = 0
        while (d := runner.match.decision) is not None and (upto is None or played < upto):
            runner.answer(d.seat, d.id, rng.randrange(len(d.options)), None)
            played += 1
        await runner.committed()

    async def go() -> tuple[dict[str, object], dict[str, object], str, str]:
        clock = ManualClock()
        first = Storage(tmp_path / "arena.db")
        runners = Runners(first, clock=clock)
        runner = runners.create_match(3, names=["a", "b", "c"])
        for seat in range(3):
            runner.join(seat, None, f"seed-{seat}")
        await play(runners, runner.id, random.Random(1), 25)
        before = state_dump(runner.match.state)
        decision = runner.match.decision
        assert decision is not None
        await first.writer.flush()
        # The crash: nothing more of the first runners runs (its clock stands still). A
        # new runners on the same file, five seconds later.
        clock = ManualClock(START + 5)
        second = Storage(tmp_path / "arena.db")
        again = Runners(second, clock=clock)
        assert again.resume() == [runner.id]
        resumed = again.matches[runner.id]
        after = state_dump(resumed.match.state)
        reasked = resumed.match.decision
        assert reasked is not None and reasked.id == decision.id
        assert reasked.asked == clock.now() and reasked.deadline > clock.now()
        # The seats' tokens still name their seats.
        assert again.seat_of(runner.tokens[2]) == (resumed, 2)
        rng = random.Random(2)
        await play(again, runner.id, rng, None)
        result = await asyncio.wait_for(resumed.result(), 30)
        first.close()
        second.close()
        # The same match, played without a crash, the same way.
        third = Storage(tmp_path / "other.db")
        plain = Runners(third, clock=ManualClock())
        twin = plain.create_match(3, names=["a", "b", "c"])
        assert twin.match.fairness is not None and runner.match.fairness is not None
        twin.match.fairness.server_seed = runner.match.fairness.server_seed
        for seat in range(3):
            twin.join(seat, None, f"seed-{seat}")
        await play(plain, twin.id, random.Random(1), 25)
        await play(plain, twin.id, random.Random(2), None)
        twin_result = await asyncio.wait_for(twin.result(), 30)
        third.close()
        assert result.ranks == twin_result.ranks and result.delivered == twin_result.delivered
        record = json.loads(result.record)
        assert record["meta"]["recovered"][0]["actions"] == 25
        assert record["actions"] == json.loads(twin_result.record)["actions"]
        return before, after, result.status, record["meta"]["fairness"]["server_seed"]

    before, after, status, _ = asyncio.run(go())
    assert before == after
    assert status == "finished"


def _act_once(channel: grpc.Channel, tokens: list[str]) -> bool:
    """Answers the open decision, whichever seat it asks, with its first option;
    returns False once the match has ended."""
    stub = pb_grpc.SeatStub(channel)
    for token in tokens:
        stream = stub.Observe(pb.ObserveRequest(), metadata=seat_metadata(token), timeout=TIMEOUT_S)
        first = next(stream).events[0]
        stream.cancel()
        snapshot = first.snapshot
        if snapshot.status in (pb.MATCH_STATUS_FINISHED, pb.MATCH_STATUS_ABORTED):
            return False
        if snapshot.HasField("decision"):
            stub.Act(
                pb.ActRequest(decision_id=snapshot.decision.decision_id, option=0),
                metadata=seat_metadata(token),
                timeout=TIMEOUT_S,
            )
            return True
    return True


def test_a_match_survives_kill_9(
    start_server: Callable[..., RunningServer], tmp_path: Path
) -> None:
    server = start_server()
    organiser = (("organiser-key", server.organiser_key),)
    with grpc.insecure_channel(server.address) as channel:
        created = pb_grpc.OrganiserStub(channel).CreateMatch(
            pb.CreateMatchRequest(players=2, time_control=pb.TimeControl(deadline_ms=60_000)),
            metadata=organiser,
            timeout=TIMEOUT_S,
        )
        tokens = list(created.seat_tokens)
        for token in tokens:
            pb_grpc.SeatStub(channel).Join(
                pb.JoinRequest(name="t"), metadata=seat_metadata(token), timeout=TIMEOUT_S
            )
        for _ in range(10):
            assert _act_once(channel, tokens)
    server.kill()
    server.restart()
    with grpc.insecure_channel(server.address) as channel:
        for _ in range(2000):
            if not _act_once(channel, tokens):
                break
        record = pb_grpc.OrganiserStub(channel).GetRecord(
            pb.GetRecordRequest(match_id=created.match_id), metadata=organiser, timeout=TIMEOUT_S
        )
    data = json.loads(record.json)
    assert data["meta"]["recovered"][0]["actions"] == 10
    assert "aborted" not in data["meta"]
    path = tmp_path / "game.json"
    path.write_text(record.json)
    replayed = subprocess.run(
        [str(MAMMAMIA), "state", str(path)], capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert replayed.returncode == 0, replayed.stderr
    verified = subprocess.run(
        [str(MAMMAMIA), "verify", str(path)], capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert verified.returncode == 0, verified.stderr
    assert "match_resumed" in server.logs()


def test_an_answer_followed_by_autopilot_moves_replays_as_played(tmp_path: Path) -> None:
    """When the seat after the one answering is on autopilot, one answer applies
    several actions; the journal keeps the answer, and the replay plays the rest."""

    async def go() -> tuple[dict[str, object], dict[str, object]]:
        storage = Storage(tmp_path / "arena.db")
        clock = ManualClock()
        runners = Runners(storage, clock=clock)
        runner = runners.create_match(3)
        for seat in range(3):
            runner.join(seat)
        rng = random.Random(5)
        # Seat 1 lets three deadlines pass: the server plays it from then on.
        while 1 not in runner.match.autopilot:
            d = runner.match.decision
            assert d is not None
            if d.seat == 1:
                clock.advance(6)  # past the 5 s deadline: the default applies
            else:
                runner.answer(d.seat, d.id, rng.randrange(len(d.options)), None)
        for _ in range(20):
            d = runner.match.decision
            assert d is not None and d.seat != 1
            runner.answer(d.seat, d.id, rng.randrange(len(d.options)), None)
        await runner.committed()
        await storage.writer.flush()
        again = Runners(Storage(tmp_path / "arena.db"), clock=ManualClock(START + 1))
        assert again.resume() == [runner.id]
        resumed = again.matches[runner.id].match
        return state_dump(runner.match.state), state_dump(resumed.state)

    before, after = asyncio.run(go())
    assert before == after
