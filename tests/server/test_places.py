"""Places on a real server: a PlayMatches call that sends `wait` becomes a place, and
an organiser's CreateMatch naming one place per seat starts the match on those calls
with no `sit`; the places named are checked before any match is created."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb

from .client import MATCH_TIMEOUT_S, Chooser, SeatPlay, _take, create_match, random_options
from .test_play_matches import Matches, kinds

if TYPE_CHECKING:
    from tests.conftest import RunningServer
from collections.abc import Callable


class Place(Matches):
    """A PlayMatches call made a place: :meth:`play` plays the seat it is given next."""

    async def wait(self, name: str = "", batch_ms: int = 0) -> str:
        """Returns the place's token, after sending `wait`."""
        self.send(pb.PlayRequest(wait=pb.WaitRequest(name=name, batch_ms=batch_ms)))
        async with asyncio.timeout(MATCH_TIMEOUT_S):
            message = await anext(self._messages)
        [event] = message.events
        assert event.WhichOneof("event") == "waiting" and event.sequence == 0
        return event.waiting.place

    async def play(self, choose: Chooser) -> SeatPlay:
        """Returns the next seat's events, from its Snapshot to `match_ended`."""
        out = SeatPlay()
        async with asyncio.timeout(MATCH_TIMEOUT_S):
            while out.ended is None:
                message = await anext(self._messages)
                out.messages.append(message)
                _take(message, out, choose, self.send, None)
        return out


async def places(
    channel: grpc.aio.Channel, count: int, **waiting: object
) -> tuple[list[Place], list[str]]:
    calls = [Place(channel) for _ in range(count)]
    return calls, [await call.wait(**waiting) for call in calls]  # type: ignore[arg-type]


def test_an_organiser_seats_places_match_after_match_without_a_sit(server: RunningServer) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            key = server.organiser_key
            calls, tokens = await places(channel, 3, name="placed")
            assert len(set(tokens)) == 3 and all(len(t) >= 24 for t in tokens)
            for seed in (21, 22):
                # Seats in another order each match: a place takes the seat it is given.
                order = tokens if seed == 21 else tokens[::-1]
                playing = [
                    asyncio.ensure_future(call.play(random_options(seed + i)))
                    for i, call in enumerate(calls)
                ]
                created = await create_match(channel, key, 3, seed=seed, places=order)
                played = await asyncio.gather(*playing)
                # The same match played with sits, seat for seat.
                again = await create_match(channel, key, 3, seed=seed)
                sitting = [Matches(channel) for _ in range(3)]
                on_sits = await asyncio.gather(
                    *(
                        sitting[seat].sit(
                            again.seat_tokens[seat],
                            random_options(seed + tokens.index(order[seat])),
                        )
                        for seat in range(3)
                    )
                )
                for seat in range(3):
                    mine = played[tokens.index(order[seat])]
                    snapshot = mine.events[0].snapshot
                    assert snapshot.match_id == created.match_id
                    assert snapshot.view.seat == seat
                    assert kinds(mine) == kinds(on_sits[seat]) and kinds(mine)
                    assert mine.ended is not None
                    assert all(r.accepted for r in mine.results)
                    assert [s.name for s in snapshot.view.seats] == ["placed"] * 3
                for call in sitting:
                    assert await call.close() == grpc.StatusCode.OK
            assert [await call.close() for call in calls] == [grpc.StatusCode.OK] * 3

    asyncio.run(scenario())


def test_a_place_still_playing_takes_its_next_seat_once_its_match_has_ended(
    server: RunningServer,
) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            key = server.organiser_key
            calls, tokens = await places(channel, 2)
            # Nothing is read (so nothing answered) until the matches are created: the
            # first match waits on its first decision meanwhile.
            first = await create_match(channel, key, 2, seed=3, places=tokens)
            # The next match names the same places while the first is in play.
            second = await create_match(channel, key, 2, seed=4, places=tokens)
            # A third seat for a place that has one waiting already is refused.
            with pytest.raises(grpc.aio.AioRpcError) as busy:
                await create_match(channel, key, 2, seed=5, places=tokens)
            assert busy.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert "places[0]" in (busy.value.details() or "")
            done = await asyncio.gather(
                *(call.play(random_options(i)) for i, call in enumerate(calls))
            )
            assert {p.events[0].snapshot.match_id for p in done} == {first.match_id}
            after = await asyncio.gather(
                *(call.play(random_options(i)) for i, call in enumerate(calls))
            )
            assert {p.events[0].snapshot.match_id for p in after} == {second.match_id}
            assert all(p.ended is not None for p in after)
            assert [await call.close() for call in calls] == [grpc.StatusCode.OK] * 2

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("named", "why"),
    [
        (lambda t: [t[0]], "places: one per seat (2), got 1"),
        (lambda t: [t[0], t[0]], "places[1]: the place of places[0] again"),
        (lambda t: [t[0], "no-such-place"], "places[1]: no open place has this token"),
    ],
)
def test_wrong_places_are_refused_and_create_no_match(
    server: RunningServer, named: Callable[[list[str]], list[str]], why: str
) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            key = server.organiser_key
            calls, tokens = await places(channel, 2)
            before = await listed(channel, key)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await create_match(channel, key, 2, places=named(tokens))
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert why in (refused.value.details() or "")
            assert await listed(channel, key) == before
            # The places are still open.
            playing = [
                asyncio.ensure_future(call.play(random_options(i))) for i, call in enumerate(calls)
            ]
            await create_match(channel, key, 2, places=tokens)
            assert all(p.ended is not None for p in await asyncio.gather(*playing))

    asyncio.run(scenario())


def test_a_place_whose_call_ended_is_unknown(server: RunningServer) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            calls, tokens = await places(channel, 2)
            assert await calls[1].close() == grpc.StatusCode.OK
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await create_match(channel, server.organiser_key, 2, places=tokens)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "places[1]: no open place" in (refused.value.details() or "")

    asyncio.run(scenario())


@pytest.mark.parametrize("then", ["sit", "wait"])
def test_a_place_takes_no_sit_and_no_second_wait(server: RunningServer, then: str) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            [call], _ = await places(channel, 1)
            created = await create_match(channel, server.organiser_key, 2)
            call.send(
                pb.PlayRequest(sit=pb.SitRequest(seat_token=created.seat_tokens[0]))
                if then == "sit"
                else pb.PlayRequest(wait=pb.WaitRequest())
            )
            async with asyncio.timeout(MATCH_TIMEOUT_S):
                code = await call.call.code()
            assert code == grpc.StatusCode.INVALID_ARGUMENT
            assert f"a place takes no {then!r}" in (await call.call.details() or "")

    asyncio.run(scenario())


def test_a_wait_with_a_name_too_long_ends_the_call(server: RunningServer) -> None:
    async def scenario() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            call = Place(channel)
            call.send(pb.PlayRequest(wait=pb.WaitRequest(name="x" * 65)))
            async with asyncio.timeout(MATCH_TIMEOUT_S):
                assert await call.call.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "wait.name" in (await call.call.details() or "")

    asyncio.run(scenario())


async def listed(channel: grpc.aio.Channel, key: str) -> list[str]:
    from .client import organiser

    listing = await organiser(channel).ListMatches(
        pb.ListMatchesRequest(), metadata=(("organiser-key", key),)
    )
    return [m.match_id for m in listing.matches]


def test_place_tokens_are_hex_so_a_command_line_never_takes_one_for_an_option() -> None:
    # `mammamia match create --places A,B`: a token that began with "-" was read as
    # an option (URL-safe base64 does, one place in 64).
    from server.places import Places

    places = Places()
    tokens = [places.add(object()) for _ in range(100)]  # type: ignore[arg-type]
    assert len(set(tokens)) == 100
    assert all(len(t) == 48 and set(t) <= set("0123456789abcdef") for t in tokens)
