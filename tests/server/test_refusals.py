"""Bad answers, bad tokens, bad requests: each gets its status code and a message that
names the reason, and the server keeps serving. An answer's refusal is one of the
contract's Refusal kinds: its status code (arena.proto's table), a message that
begins with its name, the trailing metadata `refusal` (and `rule` for an illegal
answer) on Act, the same in the ActResult on Play; when several apply, the first in
the enum's order wins; an answer that repeats the accepted one is accepted again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.answers import Refusal
from server.app import create_server
from server.seating import STATUS_OF

from .client import create_match, seat_metadata

if TYPE_CHECKING:
    from tests.conftest import RunningServer
from pathlib import Path

Code = grpc.StatusCode

# The contract's table (arena.proto, Seat.Act): each refusal's status code.
CODES = {
    "REFUSAL_MALFORMED": Code.INVALID_ARGUMENT,
    "REFUSAL_UNKNOWN_DECISION": Code.FAILED_PRECONDITION,
    "REFUSAL_OTHER_SEAT": Code.PERMISSION_DENIED,
    "REFUSAL_ALREADY_ANSWERED": Code.FAILED_PRECONDITION,
    "REFUSAL_DEFAULTED": Code.FAILED_PRECONDITION,
    "REFUSAL_NO_SUCH_OPTION": Code.INVALID_ARGUMENT,
    "REFUSAL_ILLEGAL": Code.INVALID_ARGUMENT,
}
TIMEOUT = 30  # seconds to wait for anything the server sends: generous, never timing


class Choice(TypedDict, total=False):
    """An ActRequest's choice: an option's index or an action by value."""

    option: int
    action: pb.Action


class Answer(Choice, total=False):
    """An ActRequest's fields."""

    decision_id: str


class Sent(TypedDict, total=False):
    """A PlayRequest's fields."""

    observe: pb.ObserveRequest
    act: pb.ActRequest


def details(err: grpc.aio.AioRpcError) -> str:
    """Returns the error's details, empty when it has none."""
    return err.details() or ""


def passing(count: int = 0) -> pb.TurnAction:
    """Returns a TurnAction with ``pass`` set (a Python keyword, so set by name)."""
    msg = pb.TurnAction(count=count)
    setattr(msg, "pass", True)
    return msg


def check_refusal(err: grpc.aio.AioRpcError, name: str, rule: str | None = None) -> None:
    """Asserts that a refused Act carries ``name``'s code, message prefix and trailing
    metadata (``rule`` only for an illegal answer)."""
    assert err.code() == CODES[name], (name, err.code(), details(err))
    assert details(err).startswith(f"{name}: "), details(err)
    trailing = dict(err.trailing_metadata() or ())
    assert trailing.get("refusal") == name, trailing
    assert trailing.get("rule") == rule, trailing


def check_result(
    result: pb.ActResult, decision_id: str, name: str, rule: str | None = None
) -> None:
    """Asserts that an ActResult on Play refuses with ``name`` as Act would."""
    assert result.decision_id == decision_id
    assert not result.accepted and not result.repeated
    assert result.code == CODES[name].value[0]
    assert result.refusal == pb.Refusal.Value(name)
    assert result.message.startswith(f"{name}: "), result.message
    assert result.rule == (rule or "")


def check_accepted(result: pb.ActResult, decision_id: str, repeated: bool) -> None:
    assert result.decision_id == decision_id and result.accepted
    assert result.repeated == repeated
    assert (result.code, result.message, result.rule) == (0, "", "")
    assert result.refusal == pb.REFUSAL_UNSPECIFIED


def test_the_status_table_is_the_contracts() -> None:
    assert [r.name for r in Refusal] == [n.removeprefix("REFUSAL_") for n in CODES]
    assert [pb.Refusal.Value(n) for n in CODES] == [r.value for r in Refusal]
    expected: dict[Refusal | None, grpc.StatusCode] = {
        None: Code.OK,
        **{Refusal[n.removeprefix("REFUSAL_")]: c for n, c in CODES.items()},
    }
    assert expected == STATUS_OF


@dataclass
class Open:
    """A match whose seats all observe, with the first decision asked."""

    channel: grpc.aio.Channel
    created: pb.CreateMatchResponse
    seat: int  # the seat asked
    decision: pb.DecisionRequest
    calls: list[grpc.aio.UnaryStreamCall[pb.ObserveRequest, pb.SeatEvents]]

    def act(
        self, seat: int, **fields: Unpack[Answer]
    ) -> grpc.aio.UnaryUnaryCall[pb.ActRequest, pb.ActResponse]:
        """Returns the Act call of ``seat`` answering with ``fields``."""
        stub = pb_grpc.SeatStub(self.channel)
        return stub.Act(
            pb.ActRequest(**fields),
            metadata=seat_metadata(self.created.seat_tokens[seat]),
            timeout=10,
        )

    async def refusal(self, seat: int, **fields: Unpack[Answer]) -> grpc.aio.AioRpcError:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await self.act(seat, **fields)
        return caught.value


@asynccontextmanager
async def opened(
    server: RunningServer, players: int = 2, deadline_ms: int = 60_000, **fields: object
) -> AsyncIterator[Open]:
    async with grpc.aio.insecure_channel(server.address) as channel:
        created = await create_match(
            channel,
            server.organiser_key,
            players,
            seed=3,
            time_control=pb.TimeControl(deadline_ms=deadline_ms),
            **fields,
        )
        stub = pb_grpc.SeatStub(channel)
        calls = [
            stub.Observe(pb.ObserveRequest(), metadata=seat_metadata(t))
            for t in created.seat_tokens
        ]

        async def first_decision(seat: int) -> tuple[int, pb.DecisionRequest]:
            async for message in calls[seat]:
                for event in message.events:
                    if event.HasField("decision"):
                        return seat, event.decision
                    if event.HasField("snapshot") and event.snapshot.HasField("decision"):
                        return seat, event.snapshot.decision
            raise AssertionError("stream ended without a decision")

        tasks = [asyncio.ensure_future(first_decision(i)) for i in range(players)]
        done, pending = await asyncio.wait(tasks, timeout=TIMEOUT, return_when="FIRST_COMPLETED")
        assert done, "no decision was asked"
        for t in pending:
            t.cancel()
        seat, decision = done.pop().result()
        try:
            yield Open(channel, created, seat, decision, calls)
        finally:
            for c in calls:
                c.cancel()


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


def test_illegal_answer_names_the_rule_and_leaves_the_decision_open(server: RunningServer) -> None:
    async def go() -> None:
        async with opened(server) as m:
            assert m.decision.kind == pb.DECISION_KIND_TURN
            d = m.decision.decision_id
            # Playing more cards than any hand holds is refused by R-TURN-1.
            illegal = pb.Action(
                turn=pb.TurnAction(ingredient="salami", count=7, draw=pb.DRAW_SOURCE_SUPPLY)
            )
            err = await m.refusal(m.seat, decision_id=d, action=illegal)
            check_refusal(err, "REFUSAL_ILLEGAL", "R-TURN-1")
            # A resolution answers no turn.
            err = await m.refusal(
                m.seat, decision_id=d, action=pb.Action(resolve=pb.ResolveAction(bake=False))
            )
            check_refusal(err, "REFUSAL_ILLEGAL", "R-TURN-1")
            err = await m.refusal(m.seat, decision_id=d, option=10_000)
            check_refusal(err, "REFUSAL_NO_SUCH_OPTION")
            assert "option 10000" in details(err)
            err = await m.refusal(m.seat, decision_id=d, option=len(m.decision.options))
            check_refusal(err, "REFUSAL_NO_SUCH_OPTION")
            # Still open: a legal answer by value is accepted, as a first answer.
            reply = await m.act(m.seat, decision_id=d, action=m.decision.options[-1])
            assert reply == pb.ActResponse(decision_id=d, repeated=False)

    run(go())


def test_closed_decisions_repeat_or_refuse_in_the_contracts_order(server: RunningServer) -> None:
    async def go() -> None:
        async with opened(server, players=3) as m:
            d = m.decision.decision_id
            last = len(m.decision.options) - 1
            assert last >= 1
            other = (m.seat + 1) % 3
            # Open: another seat is denied, whatever it sends (a bad index included).
            for choice in (
                Choice(option=0),
                Choice(option=99_999),
                Choice(action=m.decision.options[0]),
            ):
                err = await m.refusal(other, decision_id=d, **choice)
                check_refusal(err, "REFUSAL_OTHER_SEAT")
                assert f"seat {m.seat}" in details(err)
            # Malformed wins over everything, even an unknown or another seat's decision.
            for seat, fields in (
                (m.seat, Answer(decision_id="d999")),
                (other, Answer(decision_id=d, action=pb.Action())),
            ):
                check_refusal(await m.refusal(seat, **fields), "REFUSAL_MALFORMED")
            err = await m.refusal(m.seat, decision_id="d999", option=0)
            check_refusal(err, "REFUSAL_UNKNOWN_DECISION")
            assert "d999" in details(err)

            reply = await m.act(m.seat, decision_id=d, option=last)
            assert reply == pb.ActResponse(decision_id=d, repeated=False)
            # Closed: the same action again, by index or by value, is accepted as a repeat.
            for choice in (
                Choice(option=last),
                Choice(action=m.decision.options[last]),
                Choice(option=last),
            ):
                reply = await m.act(m.seat, decision_id=d, **choice)
                assert reply == pb.ActResponse(decision_id=d, repeated=True)
            # Another action, or a bad index, on the seat's own closed decision.
            for choice in (
                Choice(option=0),
                Choice(action=m.decision.options[0]),
                Choice(option=99_999),
            ):
                err = await m.refusal(m.seat, decision_id=d, **choice)
                check_refusal(err, "REFUSAL_ALREADY_ANSWERED")
            # A bad index on another seat's closed decision: the seat comes first.
            for option in (99_999, last):
                check_refusal(
                    await m.refusal(other, decision_id=d, option=option), "REFUSAL_OTHER_SEAT"
                )
            check_refusal(
                await m.refusal(m.seat, decision_id="d999", option=0), "REFUSAL_UNKNOWN_DECISION"
            )

    run(go())


def test_malformed_answers_are_invalid_arguments(server: RunningServer) -> None:
    async def go() -> None:
        async with opened(server) as m:
            d = m.decision.decision_id
            cases: list[Answer] = [
                {"decision_id": d},  # no choice
                {"decision_id": d, "action": pb.Action()},  # no kind (oneof)
                {"decision_id": "", "option": 0},  # no decision id
                {
                    "decision_id": d,
                    "action": pb.Action(
                        turn=pb.TurnAction(ingredient="cheese", count=1, draw=pb.DRAW_SOURCE_SUPPLY)
                    ),
                },
                {
                    "decision_id": d,
                    "action": pb.Action(
                        turn=pb.TurnAction(
                            ingredient="salami", count=1, draw=pb.DRAW_SOURCE_UNSPECIFIED
                        )
                    ),
                },
                {
                    "decision_id": d,
                    "action": pb.Action(turn=passing(count=1)),
                },  # a pass with a count
            ]
            for fields in cases:
                check_refusal(await m.refusal(m.seat, **fields), "REFUSAL_MALFORMED")
            err = await m.refusal(
                m.seat,
                decision_id=d,
                action=pb.Action(turn=pb.TurnAction(ingredient="cheese", count=1)),
            )
            check_refusal(err, "REFUSAL_MALFORMED")
            assert "R-COMP-1" in details(err)
            # The decision is still open.
            reply = await m.act(m.seat, decision_id=d, option=0)
            assert reply == pb.ActResponse(decision_id=d)

    run(go())


def test_a_defaulted_decision_refuses_every_answer(server: RunningServer) -> None:
    async def go() -> None:
        # Nobody answers: the first decision's default applies after its 300 ms.
        async with opened(server, deadline_ms=300) as m:
            d = m.decision.decision_id
            spectator = pb_grpc.SpectateStub(m.channel).Watch(
                pb.WatchRequest(match_id=m.created.match_id)
            )
            passed = None
            async with asyncio.timeout(TIMEOUT):
                async for message in spectator:
                    for event in message.events:
                        found = (
                            [event]
                            if event.HasField("deadline_passed")
                            else [
                                e for e in event.snapshot.history if e.HasField("deadline_passed")
                            ]
                        )
                        for e in found:
                            if passed is None and e.deadline_passed.decision_id == d:
                                passed = e
                    if passed is not None:
                        break
            spectator.cancel()
            assert passed is not None and passed.sequence > 0
            dp = passed.deadline_passed
            assert (dp.seat, dp.reason, dp.strikes, dp.autopilot) == (
                m.seat,
                pb.DEADLINE_REASON_LATE,
                1,
                False,
            )
            assert dp.action == m.decision.options[0]  # a turn's first option
            # Every answer to it, the default action included, is refused; a bad index
            # too (DEFAULTED comes before NO_SUCH_OPTION); another seat is still denied.
            for choice in (
                Choice(option=0),
                Choice(action=m.decision.options[0]),
                Choice(option=1),
                Choice(option=99_999),
            ):
                err = await m.refusal(m.seat, decision_id=d, **choice)
                check_refusal(err, "REFUSAL_DEFAULTED")
                assert d in details(err)
            check_refusal(
                await m.refusal(1 - m.seat, decision_id=d, option=99_999), "REFUSAL_OTHER_SEAT"
            )

    run(go())


def test_the_end_of_a_match_defaults_its_open_decision(tmp_path: Path) -> None:
    async def go() -> None:
        arena, port = await create_server(
            "127.0.0.1:0", db_path=tmp_path / "arena.db", organiser_key="k"
        )
        await arena.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                runner = arena.runners.create_match(2, deadline_ms=60_000, seed=4)
                stub = pb_grpc.SeatStub(channel)
                for token in runner.tokens:
                    await stub.Join(pb.JoinRequest(), metadata=seat_metadata(token), timeout=10)
                decision = runner.match.decision
                assert decision is not None
                result = await asyncio.wait_for(runner.abort("cut off by the test"), TIMEOUT)
                assert result.status == "aborted"
                meta = seat_metadata(runner.tokens[decision.seat])
                for option in (0, 99_999):
                    with pytest.raises(grpc.aio.AioRpcError) as caught:
                        await stub.Act(
                            pb.ActRequest(decision_id=decision.id, option=option),
                            metadata=meta,
                            timeout=10,
                        )
                    check_refusal(caught.value, "REFUSAL_DEFAULTED")
                    assert "ended" in details(caught.value)
        finally:
            await arena.drain(grace=1)

    asyncio.run(go())


class PlayStream:
    """One Play stream, written and read step by step."""

    def __init__(self, channel: grpc.aio.Channel, token: str) -> None:
        self.call = pb_grpc.SeatStub(channel).Play(metadata=seat_metadata(token))

    async def send(self, **fields: Unpack[Sent]) -> None:
        await self.call.write(pb.PlayRequest(**fields))

    async def act(self, decision_id: str, **choice: Unpack[Choice]) -> None:
        await self.send(act=pb.ActRequest(decision_id=decision_id, **choice))

    async def next(self) -> pb.SeatEvents:
        message = await asyncio.wait_for(self.call.read(), TIMEOUT)
        assert isinstance(message, pb.SeatEvents), message  # not grpc.aio.EOF
        return message

    async def reply(self) -> tuple[pb.ActResult, pb.SeatEvents]:
        """Returns the act result the next message begins with, and the message."""
        message = await self.next()
        first = message.events[0]
        assert first.HasField("act_result") and first.sequence == 0, message
        return first.act_result, message


def test_play_stream_answers_every_act_at_once(server: RunningServer) -> None:
    async def go() -> None:
        async with opened(server) as m:
            stub = pb_grpc.SeatStub(m.channel)
            meta = seat_metadata(m.created.seat_tokens[m.seat])
            # The first message must be `observe`.
            call = stub.Play(
                iter([pb.PlayRequest(act=pb.ActRequest(decision_id="d1", option=0))]), metadata=meta
            )
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in call:
                    pass
            assert caught.value.code() == Code.INVALID_ARGUMENT

            mine = PlayStream(m.channel, m.created.seat_tokens[m.seat])
            await mine.send(observe=pb.ObserveRequest())
            first = await mine.next()
            snapshot = first.events[0]
            # The open decision comes in the snapshot, and is not sent again.
            assert snapshot.HasField("snapshot") and snapshot.snapshot.HasField("decision")
            decision = snapshot.snapshot.decision
            d = decision.decision_id
            assert d == m.decision.decision_id and decision.options == m.decision.options
            assert not any(e.HasField("decision") for e in first.events)
            last = len(decision.options) - 1
            illegal = pb.Action(
                turn=pb.TurnAction(ingredient="salami", count=7, draw=pb.DRAW_SOURCE_SUPPLY)
            )
            # Each refusal is answered at once, in the next message, as Act would.
            refusals: list[tuple[str, Choice, tuple[str, str | None]]] = [
                (d, Choice(option=99_999), ("REFUSAL_NO_SUCH_OPTION", None)),
                (d, Choice(action=illegal), ("REFUSAL_ILLEGAL", "R-TURN-1")),
                ("d999", Choice(option=0), ("REFUSAL_UNKNOWN_DECISION", None)),
                (d, Choice(), ("REFUSAL_MALFORMED", None)),
            ]
            for decision_id, choice, expected in refusals:
                await mine.act(decision_id, **choice)
                result, message = await mine.reply()
                check_result(result, decision_id, *expected)
                assert len(message.events) == 1
            await mine.send(observe=pb.ObserveRequest())  # only the first may observe
            result, _ = await mine.reply()
            check_result(result, "", "REFUSAL_MALFORMED")
            assert "act" in result.message

            # Accepted: the reply, then the turn it caused, in the same message.
            await mine.act(d, option=last)
            result, message = await mine.reply()
            check_accepted(result, d, repeated=False)
            turns = [e for e in message.events[1:] if e.HasField("turn")]
            assert turns and turns[0].turn.seat == m.seat and turns[0].sequence > 0
            # Repeats are accepted at once although nothing else happens: the other seat
            # is now asked, and does not answer.
            for choice in (Choice(option=last), Choice(action=decision.options[last])):
                await mine.act(d, **choice)
                result, message = await mine.reply()
                check_accepted(result, d, repeated=True)
                assert len(message.events) == 1
            for option in (0, 99_999):
                await mine.act(d, option=option)
                result, _ = await mine.reply()
                check_result(result, d, "REFUSAL_ALREADY_ANSWERED")

            # The other seat's open decision, from its own Play snapshot.
            theirs = PlayStream(m.channel, m.created.seat_tokens[1 - m.seat])
            await theirs.send(observe=pb.ObserveRequest())
            their_snapshot = (await theirs.next()).events[0].snapshot
            assert their_snapshot.HasField("decision")
            d2 = their_snapshot.decision.decision_id
            assert d2 != d
            await mine.act(d2, option=99_999)  # open, another seat's
            result, _ = await mine.reply()
            check_result(result, d2, "REFUSAL_OTHER_SEAT")
            await theirs.act(d, option=99_999)  # closed, another seat's
            result, _ = await theirs.reply()
            check_result(result, d, "REFUSAL_OTHER_SEAT")
            # Acts sent together are answered in the order sent.
            for decision_id in ("d997", "d998", d):
                await mine.act(decision_id, option=last)
            results: list[pb.ActResult] = []
            while len(results) < 3:
                results += [
                    e.act_result for e in (await mine.next()).events if e.HasField("act_result")
                ]
            assert [r.decision_id for r in results] == ["d997", "d998", d]
            assert [r.repeated for r in results] == [False, False, True]
            mine.call.cancel()
            theirs.call.cancel()

    run(go())


def test_an_unknown_token_on_play_is_unauthenticated_even_when_written_first(
    server: RunningServer,
) -> None:
    async def go() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = pb_grpc.SeatStub(channel)
            for i in range(20):
                call = stub.Play(metadata=seat_metadata(f"not-a-token-{i}"))
                # The server reads it before refusing: the write itself succeeds.
                await asyncio.wait_for(
                    call.write(pb.PlayRequest(observe=pb.ObserveRequest())), TIMEOUT
                )
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await asyncio.wait_for(call.read(), TIMEOUT)
                assert caught.value.code() == Code.UNAUTHENTICATED, (i, caught.value)
                assert "seat-token" in details(caught.value)
                assert await call.code() == Code.UNAUTHENTICATED

    run(go())


def test_tokens(server: RunningServer) -> None:
    async def go() -> None:
        async with opened(server) as m:
            stub = pb_grpc.SeatStub(m.channel)
            for meta in [
                (),
                (("seat-token", "not-a-token"),),
                (("seat-token", ""),),
                (("organiser-key", server.organiser_key),),
            ]:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.Join(pb.JoinRequest(name="x"), metadata=meta, timeout=10)
                assert caught.value.code() == Code.UNAUTHENTICATED
                assert "seat-token" in details(caught.value)
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.Act(
                        pb.ActRequest(decision_id=m.decision.decision_id, option=0),
                        metadata=meta,
                        timeout=10,
                    )
                assert caught.value.code() == Code.UNAUTHENTICATED
            # A token of another match acts for nothing here.
            other = await create_match(m.channel, server.organiser_key, 2)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.Act(
                    pb.ActRequest(decision_id=m.decision.decision_id, option=0),
                    metadata=seat_metadata(other.seat_tokens[m.seat]),
                    timeout=10,
                )
            # (That match has asked nothing yet: no decision of that id exists there.)
            check_refusal(caught.value, "REFUSAL_UNKNOWN_DECISION")
            reply = await stub.Join(
                pb.JoinRequest(name="me"),
                metadata=seat_metadata(m.created.seat_tokens[1]),
                timeout=10,
            )
            assert (reply.match_id, reply.seat, reply.players) == (m.created.match_id, 1, 2)
            assert reply.deadline_ms == 60_000
            assert len(set(m.created.seat_tokens)) == 2
            assert all(len(t) >= 22 for t in m.created.seat_tokens)  # >= 128 bits

    run(go())


def test_organiser_key_and_bad_matches(server: RunningServer) -> None:
    async def go() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = pb_grpc.OrganiserStub(channel)
            req = pb.CreateMatchRequest(players=2)
            for meta, code in [
                ((), Code.UNAUTHENTICATED),
                ((("organiser-key", "wrong"),), Code.PERMISSION_DENIED),
            ]:
                for call in (
                    stub.CreateMatch(req, metadata=meta, timeout=10),
                    stub.ListMatches(pb.ListMatchesRequest(), metadata=meta, timeout=10),
                    stub.GetRecord(pb.GetRecordRequest(match_id="m"), metadata=meta, timeout=10),
                ):
                    with pytest.raises(grpc.aio.AioRpcError) as caught:
                        await call
                    assert caught.value.code() == code
            key = (("organiser-key", server.organiser_key),)
            for bad, words in [
                (pb.CreateMatchRequest(players=7), "R-SETUP-1"),
                (pb.CreateMatchRequest(players=2, colours=["red", "red"]), "R-SETUP-1"),
                (pb.CreateMatchRequest(players=2, first_player=2), "R-SETUP-6"),
                (pb.CreateMatchRequest(players=2, names=["a", "b", "c"]), "names"),
                (
                    pb.CreateMatchRequest(
                        players=2, time_control=pb.TimeControl(deadline_ms=3_600_000)
                    ),
                    "deadline_ms",
                ),
                (
                    pb.CreateMatchRequest(
                        players=2, time_control=pb.TimeControl(time_bank_ms=4_000_000_000)
                    ),
                    "time_bank_ms",
                ),
            ]:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.CreateMatch(bad, metadata=key, timeout=10)
                assert caught.value.code() == Code.INVALID_ARGUMENT
                assert words in details(caught.value)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.GetRecord(
                    pb.GetRecordRequest(match_id="m-nope"), metadata=key, timeout=10
                )
            assert caught.value.code() == Code.NOT_FOUND
            created = await stub.CreateMatch(
                pb.CreateMatchRequest(players=2, names=["a", "b"]), metadata=key, timeout=10
            )
            listed = await stub.ListMatches(
                pb.ListMatchesRequest(limit=5), metadata=key, timeout=10
            )
            assert listed.matches[0].match_id == created.match_id
            assert listed.matches[0].status == pb.MATCH_STATUS_WAITING
            assert list(listed.matches[0].names) == ["a", "b"]
            so_far = await stub.GetRecord(
                pb.GetRecordRequest(match_id=created.match_id), metadata=key, timeout=10
            )
            assert created.match_id in so_far.json
            spectate = pb_grpc.SpectateStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await spectate.GetRecord(pb.GetRecordRequest(match_id=created.match_id), timeout=10)
            assert caught.value.code() == Code.FAILED_PRECONDITION
            unknown: tuple[Awaitable[object], ...] = (
                spectate.GetRecord(pb.GetRecordRequest(match_id="m-nope"), timeout=10),
                spectate.Watch(pb.WatchRequest(match_id="m-nope"), timeout=10).read(),
            )
            for asked in unknown:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await asked
                assert caught.value.code() == Code.NOT_FOUND

    run(go())


def test_garbage_requests_leave_the_server_serving(server: RunningServer) -> None:
    async def go() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            created = await create_match(channel, server.organiser_key, 2)
            meta = seat_metadata(created.seat_tokens[0])
            # Oversized: beyond the request size limit.
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await pb_grpc.SeatStub(channel).Join(
                    pb.JoinRequest(name="x" * (2 << 20)), metadata=meta, timeout=10
                )
            assert caught.value.code() == Code.RESOURCE_EXHAUSTED
            # A name too long for a seat.
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await pb_grpc.SeatStub(channel).Join(
                    pb.JoinRequest(name="x" * 65), metadata=meta, timeout=10
                )
            assert caught.value.code() == Code.INVALID_ARGUMENT
            # Bytes that are no protobuf message at all.
            raw: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
                "/mammamia.v1.Seat/Act"
            )
            for junk in (b"\xff\xff\xff\xff", b"\x0a\x05ab", b"\x12"):
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await raw(junk, metadata=meta, timeout=10)
                assert caught.value.code() != Code.OK
            # An unknown method.
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                cheat: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
                    "/mammamia.v1.Seat/Cheat"
                )
                await cheat(b"", timeout=10)
            assert caught.value.code() == Code.UNIMPLEMENTED
            reply = await health_pb2_grpc.HealthStub(channel).Check(  # type: ignore[attr-defined]
                health_pb2.HealthCheckRequest(), timeout=10
            )
            assert reply.status == health_pb2.HealthCheckResponse.SERVING

    run(go())
    assert server.running


def test_health_and_reflection(server: RunningServer) -> None:
    async def go() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            for service in ("", "mammamia.v1.Seat", "mammamia.v1.Organiser"):
                reply = await health.Check(  # type: ignore[attr-defined]
                    health_pb2.HealthCheckRequest(service=service), timeout=10
                )
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
            # The reflection stubs type the stub for a blocking channel only, and its
            # method as binascii.Incomplete (an exception class), not as a callable.
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)  # type: ignore[arg-type]
            call = stub.ServerReflectionInfo(  # type: ignore[operator]
                iter([reflection_pb2.ServerReflectionRequest(list_services="")])
            )
            names: set[str] = set()
            async for reply in call:
                names = {s.name for s in reply.list_services_response.service}
                break
            assert {"mammamia.v1.Seat", "mammamia.v1.Spectate", "mammamia.v1.Organiser"} <= names

    run(go())
