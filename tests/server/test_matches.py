"""Full matches on a real server: every seat played by a client that knows only the
options the server sends, for 2 to 5 players, by the Play stream and by Observe + Act;
the spectator sees the same end; the stored record replays to the same winners."""

from __future__ import annotations

import asyncio
import json
import subprocess

import grpc
import pytest

from mammamia import Resolve, loads
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc

from .client import MAMMAMIA, create_match, observe_and_act, play, random_options, watch


async def _full_match(address: str, key: str, players: int, seed: int
                      ) -> tuple[pb.CreateMatchResponse, list, list[pb.SeatEvent], str]:
    async with grpc.aio.insecure_channel(address) as channel:
        created = await create_match(channel, key, players, seed=seed,
                                     names=[f"bot{i}" for i in range(players)])
        seats = [
            # The last seat plays with Observe + Act, the others on the Play stream.
            observe_and_act(channel, token, random_options(seed + i)) if i == players - 1
            else play(channel, token, random_options(seed + i), name=f"bot{i}")
            for i, token in enumerate(created.seat_tokens)]
        spectator = asyncio.ensure_future(watch(channel, created.match_id))
        plays = await asyncio.gather(*seats)
        seen = await spectator
        record = await pb_grpc.SpectateStub(channel).GetRecord(
            pb.GetRecordRequest(match_id=created.match_id), timeout=10)
    return created, plays, seen, record.json


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_full_match(server, tmp_path, players):
    created, plays, seen, record_json = asyncio.run(
        _full_match(server.address, server.organiser_key, players, seed=100 + players))

    # Every seat saw the end, the same end, and every decision it was asked was answered.
    ends = [p.ended for p in plays]
    assert all(e is not None and e.status == pb.MATCH_STATUS_FINISHED for e in ends)
    assert len({e.SerializeToString() for e in ends}) == 1
    end = ends[0]
    assert list(end.winners) and len(end.ranks) == players
    for p in plays:
        decisions = [e.decision.decision_id for e in p.events if e.HasField("decision")]
        assert decisions and decisions == p.answered
        assert all(r.accepted for r in p.results)
        sequences = [e.sequence for e in p.events[1:] if not e.HasField("act_result")]
        assert sequences == list(range(1, len(sequences) + 1))
        # One message per decision: a request ends its message, a reply begins one.
        for message in p.messages:
            kinds = [e.WhichOneof("event") for e in message.events]
            assert "decision" not in kinds[:-1] and "act_result" not in kinds[1:], kinds
    assert seen[0].HasField("snapshot") and not any(e.HasField("decision") for e in seen)
    assert seen[-1].match_ended == end

    # The stored record replays, with `mammamia state`, to the same winners.
    record = loads(record_json)
    assert record.meta["match"] == created.match_id
    assert record.meta["names"] == [f"bot{i}" for i in range(players)]
    assert record.meta["timeouts"] == []
    path = tmp_path / "record.json"
    path.write_text(record_json)
    done = subprocess.run([str(MAMMAMIA), "state", str(path)], capture_output=True, text=True,
                          timeout=60, check=True)
    dump = json.loads(done.stdout)
    assert dump["phase"] == "over"
    assert dump["winners"] == list(end.winners)
    total = sum(len(p.answered) for p in plays)
    assert len(record.actions) == total
    # Every resolution decision in the record was asked as one.
    asked = sum(e.decision.kind == pb.DECISION_KIND_RESOLVE for p in plays for e in p.events
                if e.HasField("decision"))
    assert asked == sum(isinstance(a, Resolve) for _, a in record.actions)
