"""The Rules service end to end: a real ``mammamia rules-serve`` and a client built
from the generated stubs alone, checked against the rules engine in-process."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mammamia import new_game, record_of, view_of
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import rules_pb2 as rpb
from server import wire

from .conftest import MAX_STATES, RulesService

TIMEOUT = 10


def new(rules: RulesService, players: int = 3, seed: int = 7) -> int:
    """Returns the handle of a new game."""
    reply = rules.stub.NewGame(rpb.NewGameRequest(players=players, seed=seed), timeout=TIMEOUT)
    return int(reply.state.handle)


def release(rules: RulesService, *handles: int) -> None:
    rules.stub.Release(rpb.ReleaseRequest(handles=handles), timeout=TIMEOUT)


def walk(rules: RulesService, handle: int, steps: int, seed: int) -> list[pb.SeatEvent]:
    """Returns the events of ``steps`` random legal options applied to ``handle``."""
    rng = random.Random(seed)
    events: list[pb.SeatEvent] = []
    for _ in range(steps):
        legal = rules.stub.Legal(rpb.LegalRequest(handle=handle), timeout=TIMEOUT)
        if not legal.options:
            break
        applied = rules.stub.Apply(
            rpb.ApplyRequest(handle=handle, option=rng.randrange(len(legal.options))),
            timeout=TIMEOUT,
        )
        events.extend(applied.events)
    return events


def code_of(call: object, request: object) -> grpc.StatusCode:
    """Returns the status code a call fails with (fails the test when it succeeds)."""
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=TIMEOUT)  # type: ignore[operator]
    code: grpc.StatusCode = caught.value.code()
    return code


def test_health_is_serving(rules: RulesService) -> None:
    stub = health_pb2_grpc.HealthStub(rules.channel)
    reply = stub.Check(health_pb2.HealthCheckRequest(service="mammamia.v1.Rules"), timeout=TIMEOUT)  # type: ignore[attr-defined]
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_a_game_played_through_the_service_is_the_engines_game(rules: RulesService) -> None:
    # The same seed deals the same game: every option list, event and view matches
    # the engine's, in the arena's own messages and canonical order.
    handle = new(rules, players=3, seed=11)
    local = new_game(3, 11)
    rng = random.Random(3)
    sequence = 2  # 1 is round 1's start
    while not local.is_over:
        legal = rules.stub.Legal(rpb.LegalRequest(handle=handle), timeout=TIMEOUT)
        assert list(legal.options) == [wire.action_message(a) for a in local.legal_actions()]
        assert legal.to_act == local.to_act
        choice = rng.randrange(len(legal.options))
        applied = rules.stub.Apply(rpb.ApplyRequest(handle=handle, option=choice), timeout=TIMEOUT)
        local.apply(local.legal_actions()[choice])
        assert applied.state.handle == handle
        assert [e.sequence for e in applied.events] == list(
            range(sequence, sequence + len(applied.events))
        )
        sequence += len(applied.events)
    over = rules.stub.Legal(rpb.LegalRequest(handle=handle), timeout=TIMEOUT)
    assert not over.options and not over.HasField("to_act")
    for seat in (0, 2, None):
        got = rules.stub.GetView(rpb.GetViewRequest(handle=handle, seat=seat), timeout=TIMEOUT)
        assert got.view == pb.View.FromString(wire.view_bytes(view_of(local, seat)))
    release(rules, handle)


def test_fork_and_clone_leave_the_original(rules: RulesService) -> None:
    handle = new(rules)
    before = rules.stub.GetView(rpb.GetViewRequest(handle=handle, history=True), timeout=TIMEOUT)
    forked = rules.stub.Apply(rpb.ApplyRequest(handle=handle, option=0, fork=True), timeout=TIMEOUT)
    clone = rules.stub.Clone(rpb.CloneRequest(handle=handle), timeout=TIMEOUT)
    assert len({handle, forked.state.handle, clone.state.handle}) == 3
    after = rules.stub.GetView(rpb.GetViewRequest(handle=handle, history=True), timeout=TIMEOUT)
    assert after == before
    fork_view = rules.stub.GetView(
        rpb.GetViewRequest(handle=forked.state.handle, history=True), timeout=TIMEOUT
    )
    assert list(fork_view.history) == [*before.history, *forked.events]
    release(rules, handle, forked.state.handle, clone.state.handle)


def test_a_record_replays_to_its_state(rules: RulesService) -> None:
    local = new_game(4, 5)
    rng = random.Random(5)
    actions = []
    while not local.is_over:
        seat, action = local.to_act, rng.choice(local.legal_actions())
        assert seat is not None
        local.apply(action)
        actions.append((seat, action))
    text = record_of(local, actions, seed=5).dumps()
    for upto in (0, 40, None):
        request = rpb.FromRecordRequest(record_json=text)
        if upto is not None:
            request.actions = upto
        reply = rules.stub.FromRecord(request, timeout=TIMEOUT)
        state = new_game(4, 5)
        for _, a in actions[:upto]:
            state.apply(a)
        got = rules.stub.GetView(
            rpb.GetViewRequest(handle=reply.state.handle, seat=1), timeout=TIMEOUT
        )
        assert got.view == pb.View.FromString(wire.view_bytes(view_of(state, 1)))
        release(rules, reply.state.handle)
    bad = rpb.FromRecordRequest(record_json='{"format": "nope"}')
    assert code_of(rules.stub.FromRecord, bad) == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize(("players", "steps"), [(2, 25), (3, 60), (5, 45)])
def test_determinized_samples_look_the_same_to_the_seat(
    rules: RulesService, players: int, steps: int
) -> None:
    # The knowledge goes in as a seat's streams give it (a view, the numbered log);
    # every sample shows that seat the very same view and history.
    handle = new(rules, players=players, seed=players * 100 + steps)
    walk(rules, handle, steps, seed=steps)
    seat = players - 1
    known = rules.stub.GetView(
        rpb.GetViewRequest(handle=handle, seat=seat, history=True), timeout=TIMEOUT
    )
    request = rpb.DeterminizeRequest(
        knowledge=rpb.SeatKnowledge(view=known.view, history=known.history), seed=9, count=4
    )
    samples = rules.stub.Determinize(request, timeout=TIMEOUT).states
    assert len(samples) == 4
    for sample in samples:
        seen = rules.stub.GetView(
            rpb.GetViewRequest(handle=sample.handle, seat=seat, history=True), timeout=TIMEOUT
        )
        assert seen == known
    again = rules.stub.Determinize(request, timeout=TIMEOUT).states
    spectator = [
        rules.stub.GetView(rpb.GetViewRequest(handle=s.handle, seat=0), timeout=TIMEOUT).view
        for s in (*samples, *again)
    ]
    assert spectator[:4] == spectator[4:]  # the same seed, the same samples
    release(rules, handle, *(s.handle for s in (*samples, *again)))


def test_determinize_from_a_record_so_far(rules: RulesService) -> None:
    local = new_game(3, 21)
    rng = random.Random(21)
    actions = []
    for _ in range(50):
        seat, action = local.to_act, rng.choice(local.legal_actions())
        assert seat is not None
        local.apply(action)
        actions.append((seat, action))
    text = record_of(local, actions, seed=21).dumps()
    request = rpb.DeterminizeRequest(
        record=rpb.RecordKnowledge(record_json=text, seat=0, actions=30), seed=1, count=2
    )
    samples = rules.stub.Determinize(request, timeout=TIMEOUT).states
    state = new_game(3, 21)
    for _, a in actions[:30]:
        state.apply(a)
    expected = pb.View.FromString(wire.view_bytes(view_of(state, 0)))
    for sample in samples:
        got = rules.stub.GetView(rpb.GetViewRequest(handle=sample.handle, seat=0), timeout=TIMEOUT)
        assert got.view == expected
    release(rules, *(s.handle for s in samples))


def test_playouts_replay_by_seed_and_leave_the_state(rules: RulesService) -> None:
    handle = new(rules, players=3, seed=2)
    before = rules.stub.GetView(rpb.GetViewRequest(handle=handle), timeout=TIMEOUT)
    results = [
        rules.stub.Playout(
            rpb.PlayoutRequest(handle=handle, policies=[policy], seed=seed), timeout=TIMEOUT
        )
        for policy in ("random", "greedy", "counter")
        for seed in (1, 1, 2)
    ]
    for result in results:
        assert len(result.ranks) == 3 and 1 in result.ranks and result.decisions > 0
        assert list(result.winners) == [s for s in range(3) if result.ranks[s] == 1]
    assert results[0] == results[1] and results[3] == results[4] and results[6] == results[7]
    mixed = rules.stub.Playout(
        rpb.PlayoutRequest(
            handle=handle, policies=["counter", "random", "greedy"], seed=4, first_option=0
        ),
        timeout=TIMEOUT,
    )
    assert len(mixed.delivered) == 3
    assert rules.stub.GetView(rpb.GetViewRequest(handle=handle), timeout=TIMEOUT) == before
    release(rules, handle)


def test_refusals_carry_their_status(rules: RulesService) -> None:
    handle = new(rules)
    stub = rules.stub
    assert code_of(stub.Legal, rpb.LegalRequest(handle=10**9)) == grpc.StatusCode.NOT_FOUND
    assert (
        code_of(stub.Apply, rpb.ApplyRequest(handle=handle, option=999))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    illegal = pb.Action(resolve=pb.ResolveAction(bake=False))  # a resolution in a turn
    with pytest.raises(grpc.RpcError) as caught:
        stub.Apply(rpb.ApplyRequest(handle=handle, action=illegal), timeout=TIMEOUT)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "R-" in (caught.value.details() or "")
    assert code_of(stub.Apply, rpb.ApplyRequest(handle=handle)) == grpc.StatusCode.INVALID_ARGUMENT
    assert (
        code_of(stub.Playout, rpb.PlayoutRequest(handle=handle, policies=["nobody"]))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    assert (
        code_of(stub.Playout, rpb.PlayoutRequest(handle=handle, policies=["random"] * 2))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    assert code_of(stub.NewGame, rpb.NewGameRequest(players=7)) == grpc.StatusCode.INVALID_ARGUMENT
    assert (
        code_of(stub.GetView, rpb.GetViewRequest(handle=handle, seat=3))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    spectator = stub.GetView(rpb.GetViewRequest(handle=handle), timeout=TIMEOUT).view
    assert (
        code_of(
            stub.Determinize, rpb.DeterminizeRequest(knowledge=rpb.SeatKnowledge(view=spectator))
        )
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    assert code_of(stub.Determinize, rpb.DeterminizeRequest()) == grpc.StatusCode.INVALID_ARGUMENT
    release(rules, handle)
    assert code_of(stub.Clone, rpb.CloneRequest(handle=handle)) == grpc.StatusCode.NOT_FOUND


def test_states_are_bounded_and_released(rules: RulesService) -> None:
    held = rules.stub.Release(rpb.ReleaseRequest(), timeout=TIMEOUT).held
    room = MAX_STATES - held
    handles = [new(rules, seed=i) for i in range(room)]
    assert (
        code_of(rules.stub.NewGame, rpb.NewGameRequest(players=2))
        == grpc.StatusCode.RESOURCE_EXHAUSTED
    )
    assert (
        code_of(rules.stub.Clone, rpb.CloneRequest(handle=handles[0]))
        == grpc.StatusCode.RESOURCE_EXHAUSTED
    )
    # A playout holds no state: it still runs at the bound.
    rules.stub.Playout(rpb.PlayoutRequest(handle=handles[0]), timeout=TIMEOUT)
    freed = rules.stub.Release(
        rpb.ReleaseRequest(handles=[*handles, handles[0], 10**9]), timeout=TIMEOUT
    )
    assert (freed.released, freed.held) == (room, held)
    release(rules, new(rules))


def test_a_bad_bound_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mammamia", "rules-serve", "--max-states", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--max-states" in done.stderr
