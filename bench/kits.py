"""How a client in any language fares against the built-in random bot.

A server in-process (127.0.0.1, a free port, a temporary SQLite file) plays
``--games`` two-player matches, ``--parallel`` at a time: in each, one seat is the
client command (``{server}`` and ``{token}`` substituted, as in ``mammamia
conformance --client``) and the other ``mammamia bot random``. The games come in
deal pairs: each deal (seed ``--seed``, ``--seed`` + 1, ...) twice with the seats
swapped, so the deals' luck cancels. A game counts 1 for a win alone, 1/2 for a
shared win, 0 otherwise; the win rate comes with its 95% Wilson interval.

``python -m bench.kits --client "kits/go/bin/starter --server {server} --token
{token}" --games 200`` prints the table (a progress line every ten games on
stderr); ``--json FILE`` writes the figures. Each kit's README has its result.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from client_sdk.arena import wilson_interval
from client_sdk.logs import configure_quiet
from server.app import create_server
from server.conformance.kit import substitute

RANDOM_BOT = (sys.executable, "-m", "mammamia", "bot", "random")
"""The opponent: the built-in random bot, run as a client of its own."""

DEADLINE_MS = 10_000
"""Each decision's deadline: generous, so a slow start-up is not a default."""


async def _run_seat(argv: Sequence[str], log: Path) -> int:
    """Returns the exit code of one seat's client, its output appended to ``log``."""
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out
        )
        return await process.wait()


async def _game(
    address: str, arena: Any, client: Sequence[str], seed: int, seat: int, logs: Path
) -> dict[str, Any]:
    """Plays one match, the client in ``seat``; returns its outcome for the client."""
    runner = arena.runners.create_match(2, seed=seed, deadline_ms=DEADLINE_MS)
    theirs = [*RANDOM_BOT, "--server", address, "--token", runner.tokens[1 - seat]]
    codes = await asyncio.gather(
        _run_seat(substitute(client, address, runner.tokens[seat]), logs / "client.log"),
        _run_seat(theirs, logs / "random.log"),
    )
    result = await asyncio.wait_for(runner.result(), 60)
    won = seat in result.winners
    return {
        "seed": seed,
        "seat": seat,
        "status": result.status,
        "score": (1.0 / len(result.winners)) if won else 0.0,
        "delivered": result.delivered[seat],
        "client_exit": codes[0],
    }


async def _games(client: Sequence[str], games: int, seed: int, parallel: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mammamia-kits-") as tmp:
        logs = Path(tmp)
        arena, port = await create_server(
            "127.0.0.1:0", db_path=logs / "arena.db", organiser_key="bench"
        )
        await arena.start()
        address = f"127.0.0.1:{port}"
        gate = asyncio.Semaphore(parallel)
        done: list[dict[str, Any]] = []
        started = time.perf_counter()

        async def one(g: int) -> None:
            async with gate:
                done.append(await _game(address, arena, client, seed + g // 2, g % 2, logs))
                if len(done) % 10 == 0:
                    rate = sum(d["score"] for d in done) / len(done)
                    print(f"kits: {len(done)}/{games} games, win rate {rate:.3f}", file=sys.stderr)

        try:
            await asyncio.gather(*(one(g) for g in range(games)))
        finally:
            await arena.drain(grace=1)
        seconds = time.perf_counter() - started
    score = sum(d["score"] for d in done)
    low, high = wilson_interval(score, len(done))
    return {
        "games": len(done),
        "win_rate": round(score / len(done), 4),
        "low": round(low, 4),
        "high": round(high, 4),
        "aborted": sum(d["status"] != "finished" for d in done),
        "client_failures": sum(d["client_exit"] != 0 for d in done),
        "seconds": round(seconds, 1),
    }


def run(client: str, games: int = 200, seed: int = 1, parallel: int = 4) -> dict[str, Any]:
    """Returns the client's win rate against random over ``games`` games (see the module)."""
    if games < 2 or games % 2:
        raise ValueError(f"--games {games}: give an even count of at least 2 (deal pairs)")
    return {"client": client} | asyncio.run(_games(shlex.split(client), games, seed, parallel))


def table(result: dict[str, Any]) -> list[str]:
    """Returns the printed lines of a result."""
    return [
        f"client: {result['client']}",
        f"against random, {result['games']} games in {result['seconds']} s: "
        f"win rate {result['win_rate']:.3f} (95% interval {result['low']:.3f} to "
        f"{result['high']:.3f})",
        f"aborted matches: {result['aborted']}; client exits other than 0: "
        f"{result['client_failures']}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.kits",
        description="Play a client command against the built-in random bot on a local "
        "server and print its win rate with a 95%% interval.",
    )
    parser.add_argument(
        "--client",
        required=True,
        help="the client's command line, with {server} and {token} (as mammamia conformance)",
    )
    parser.add_argument("--games", type=int, default=200, help="games, an even count (200)")
    parser.add_argument("--seed", type=int, default=1, help="the first deal's seed (1)")
    parser.add_argument("--parallel", type=int, default=4, help="matches at a time (4)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    configure_quiet()
    try:
        result = run(args.client, args.games, args.seed, args.parallel)
    except ValueError as error:
        parser.error(str(error))
    print("\n".join(table(result)))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
