"""What streams that are never read hold, and for how long: ended matches, each with a
Watch whose client never reads it, over a connection with a small flow-control window.

A server in this process ends ``--matches`` 5-player matches (every seat answering
its first option), each watched by a call that is never read, so each stream waits
in a write once its window is full. It reports the streams open and the matches held
once the matches have ended, then, after the server's hold of an ended match
(``--hold`` seconds instead of the minute of a real server), how soon the streams were
ended, and the Python memory the server let go of with the matches (tracemalloc).
``python -m bench.held_streams`` prints the figures; ``run()`` returns them.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import grpc
import structlog

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.app import create_server
from server.quotas import Quotas

SMALL_WINDOW: Any = [("grpc.http2.lookahead_bytes", 1024), ("grpc.http2.bdp_probe", 0)]


async def _run(matches: int, hold: float) -> dict[str, Any]:
    tracemalloc.start()
    try:
        with tempfile.TemporaryDirectory() as d:
            arena, port = await create_server(
                "127.0.0.1:0",
                db_path=Path(d) / "arena.db",
                organiser_key="k",
                quotas=Quotas(public_rate=f"{matches * 2}/second"),
            )
            await arena.start()
            runners = arena.runners
            runners.keep_ended = hold
            runners.max_ended = max(runners.max_ended, matches)
            try:
                async with grpc.aio.insecure_channel(
                    f"127.0.0.1:{port}", options=SMALL_WINDOW
                ) as channel:
                    held = [
                        runners.create_match(5, seed=i, deadline_ms=60_000) for i in range(matches)
                    ]
                    calls = [
                        pb_grpc.SpectateStub(channel).Watch(pb.WatchRequest(match_id=r.id))
                        for r in held
                    ]
                    async with asyncio.timeout(60):
                        while runners.streams_open.count < matches:
                            await asyncio.sleep(0.01)
                    for r in held:
                        for seat in range(5):
                            r.join(seat)
                        while (d_ := r.match.decision) is not None:
                            r.answer(d_.seat, d_.id, 0, None)
                        await asyncio.sleep(0)
                    for r in held:
                        await r.result()
                    ended_at = time.monotonic()
                    await asyncio.sleep(min(0.5, hold / 2))
                    open_after_end = runners.streams_open.count
                    held_after_end = len(runners.matches)
                    del held, r
                    gc.collect()
                    before = tracemalloc.take_snapshot()
                    async with asyncio.timeout(hold + 60):
                        while runners.streams_open.count:
                            await asyncio.sleep(0.01)
                    closed_after = time.monotonic() - ended_at - hold
                    open_after_hold = runners.streams_open.count
                    await asyncio.sleep(0.2)
                    gc.collect()
                    after = tracemalloc.take_snapshot()
                    freed = -sum(s.size_diff for s in after.compare_to(before, "filename"))
                    for call in calls:
                        call.cancel()
            finally:
                await arena.drain(grace=1)
    finally:
        tracemalloc.stop()
    return {
        "matches": matches,
        "hold_s": hold,
        "streams_open_after_end": open_after_end,
        "matches_held_after_end": held_after_end,
        "streams_open_after_hold": open_after_hold,
        "streams_closed_s_after_hold": round(closed_after, 2),
        "memory_let_go_kb": round(freed / 1024),
        "memory_let_go_kb_per_match": round(freed / 1024 / max(1, held_after_end), 1),
    }


def run(matches: int = 200, hold: float = 30.0) -> dict[str, Any]:
    """Returns the figures of ``matches`` ended matches with a Watch never read, held
    ``hold`` seconds after their end."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    return asyncio.run(_run(matches, hold))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.held_streams", description=__doc__)
    parser.add_argument("--matches", type=int, default=200)
    parser.add_argument("--hold", type=float, default=30.0, help="seconds an ended match is held")
    args = parser.parse_args()
    for key, value in run(args.matches, args.hold).items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
