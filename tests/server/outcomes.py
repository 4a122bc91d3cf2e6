"""How a call ended, as a client sees it: its status code, message and trailing
metadata, whether the call is unary or streamed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Outcome:
    """The end of one call: its code, its message and its trailing metadata."""

    code: grpc.StatusCode
    details: str
    trailers: tuple[tuple[str, str | bytes], ...] = ()

    def size(self) -> int:
        """Returns the characters of the message and the trailing metadata together."""
        return len(self.details) + sum(len(k) + len(v) for k, v in self.trailers)


def _trailers(metadata: Any) -> tuple[tuple[str, str | bytes], ...]:
    return tuple((k, v) for k, v in (metadata or ()))


async def unary(call: Awaitable[Any]) -> Outcome:
    """Returns how a unary call ended."""
    try:
        await call
    except grpc.aio.AioRpcError as e:
        return Outcome(e.code(), e.details() or "", _trailers(e.trailing_metadata()))
    return Outcome(grpc.StatusCode.OK, "")


async def streamed(call: Any) -> Outcome:
    """Returns how a call with a response stream ended, once it has (every message
    read and dropped)."""
    try:
        async with asyncio.timeout(TIMEOUT_S):
            async for _ in call:
                pass
    except grpc.aio.AioRpcError as e:
        return Outcome(e.code(), e.details() or "", _trailers(e.trailing_metadata()))
    return Outcome(await call.code(), await call.details() or "")


async def requests_then_wait(messages: Sequence[Any], until: asyncio.Event) -> AsyncIterator[Any]:
    """Yields ``messages``, then keeps the request stream open until ``until`` is set
    (a request stream that ends early would end some calls for that reason alone)."""
    for message in messages:
        yield message
    await until.wait()
