"""The Rules service through gRPC: latency per call, playouts per second, and the Node.js
bot's ``--search`` mode against its default policy in matches on a real server.

    python -m bench.rules_service                      # latency and playouts
    python -m bench.rules_service --versus 60          # + 60 two-player matches

Latency: a real ``mammamia rules-serve`` (its own process) and one client built from
the generated stubs, calling one at a time as a search bot does; each call is timed
from the client (serialisation, the loopback and the service's work). States are
mid-game (40 random actions into a seeded game), as a bot searches them.

Versus: ``mammamia serve`` on a temporary database, two-player matches created by
the organiser (seed = the match number), the Node.js bot with ``--search`` in one
seat (alternating seats) and the Node.js bot's default policy in the other, one
``rules-serve`` shared by the searching bots. A match counts as a win for search
when its seat ranks first alone, half when both rank first (R-END-2).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc

from mammamia_pb import rules_pb2 as rpb
from mammamia_pb import rules_pb2_grpc as rpb_grpc

from .latency import summary

ROOT = Path(__file__).resolve().parents[1]
NODE_BOT = ROOT / "bots" / "node" / "bot.js"
START_TIMEOUT_S = 30
MID_GAME = 40


@contextmanager
def _process(
    argv: list[str], directory: Path, name: str, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Yields the port a service started with ``argv`` (plus ``--port 0 --port-file``)
    writes; stops it at the end."""
    port_file = directory / f"{name}.port"
    log = (directory / f"{name}.log").open("wb")
    process = subprocess.Popen(
        [*argv, "--port", "0", "--port-file", str(port_file), "--log-format", "json"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not port_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"{name} did not start: {(directory / f'{name}.log').read_text()[-2000:]}"
                )
            time.sleep(0.05)
        yield port_file.read_text().strip()
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _mammamia() -> list[str]:
    return [sys.executable, "-m", "mammamia"]


def _timed(samples: dict[str, list[float]], name: str, call: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    reply = call()
    samples.setdefault(name, []).append((time.perf_counter() - started) * 1000)
    return reply


def _mid_game(stub: rpb_grpc.RulesStub, players: int, seed: int) -> int:
    """Returns the handle of a seeded game MID_GAME random actions in."""
    handle = int(stub.NewGame(rpb.NewGameRequest(players=players, seed=seed)).state.handle)
    rng = random.Random(seed)
    for _ in range(MID_GAME):
        legal = stub.Legal(rpb.LegalRequest(handle=handle))
        stub.Apply(rpb.ApplyRequest(handle=handle, option=rng.randrange(len(legal.options))))
    return handle


def run(seconds: float = 3.0, players: int = 3) -> dict[str, Any]:
    """Returns latency per call (ms: p50, p99, ...) and playouts per second through a
    real service, each call kind measured for about ``seconds``."""
    samples: dict[str, list[float]] = {}
    rates: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        _process([*_mammamia(), "rules-serve"], Path(tmp), "rules") as port,
    ):
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = rpb_grpc.RulesStub(channel)
        base = _mid_game(stub, players, 1)
        seat = int(stub.Legal(rpb.LegalRequest(handle=base)).to_act)
        known = stub.GetView(rpb.GetViewRequest(handle=base, seat=seat, history=True))
        knowledge = rpb.SeatKnowledge(view=known.view, history=known.history)

        def during(name: str, body: Callable[[int], None]) -> None:
            end = time.perf_counter() + seconds
            i = 0
            while time.perf_counter() < end:
                body(i)
                i += 1

        during(
            "Legal",
            lambda i: _timed(samples, "Legal", lambda: stub.Legal(rpb.LegalRequest(handle=base))),
        )

        def apply_fork(i: int) -> None:
            made = _timed(
                samples,
                "Apply (fork)",
                lambda: stub.Apply(rpb.ApplyRequest(handle=base, option=0, fork=True)),
            )
            stub.Release(rpb.ReleaseRequest(handles=[made.state.handle]))

        during("Apply", apply_fork)

        def clone(i: int) -> None:
            made = _timed(samples, "Clone", lambda: stub.Clone(rpb.CloneRequest(handle=base)))
            _timed(
                samples,
                "Release",
                lambda: stub.Release(rpb.ReleaseRequest(handles=[made.state.handle])),
            )

        during("Clone", clone)
        during(
            "GetView",
            lambda i: _timed(
                samples,
                "GetView (seat, history)",
                lambda: stub.GetView(rpb.GetViewRequest(handle=base, seat=seat, history=True)),
            ),
        )

        def determinize(i: int) -> None:
            made = _timed(
                samples,
                "Determinize",
                lambda: stub.Determinize(
                    rpb.DeterminizeRequest(knowledge=knowledge, seed=i, count=1)
                ),
            )
            stub.Release(rpb.ReleaseRequest(handles=[s.handle for s in made.states]))

        during("Determinize", determinize)

        for policy in ("random", "greedy", "counter"):
            name = f"Playout ({policy})"
            started = time.perf_counter()

            def playout(i: int, policy: str = policy, name: str = name) -> None:
                _timed(
                    samples,
                    name,
                    lambda: stub.Playout(
                        rpb.PlayoutRequest(handle=base, policies=[policy], seed=i)
                    ),
                )

            during(name, playout)
            rates[f"playouts_per_s_{policy}"] = round(
                len(samples[name]) / (time.perf_counter() - started), 1
            )

        # What a flat Monte Carlo bot does: a sample, one playout per option, release.
        options = len(stub.Legal(rpb.LegalRequest(handle=base)).options)
        count = 0
        started = time.perf_counter()
        end = started + seconds
        i = 0
        while time.perf_counter() < end:
            sample = stub.Determinize(rpb.DeterminizeRequest(knowledge=knowledge, seed=i))
            handle = sample.states[0].handle
            for option in range(options):
                stub.Playout(
                    rpb.PlayoutRequest(
                        handle=handle, policies=["greedy"], seed=i, first_option=option
                    )
                )
                count += 1
            stub.Release(rpb.ReleaseRequest(handles=[handle]))
            i += 1
        rates["flat_mc_playouts_per_s_greedy"] = round(count / (time.perf_counter() - started), 1)
        channel.close()
    return {
        "players": players,
        "mid_game_actions": MID_GAME,
        "history_events": len(known.history),
        "latency_ms": {name: summary(s, digits=3) for name, s in samples.items()},
        **rates,
    }


def table(result: dict[str, Any]) -> list[str]:
    """Returns the figures as printable lines."""
    lines = [
        f"Rules service, {result['players']} players, mid-game "
        f"({result['mid_game_actions']} actions, {result['history_events']} events)",
        f"{'call':<26}{'n':>7}{'p50 ms':>10}{'p99 ms':>10}",
    ]
    for name, s in result["latency_ms"].items():
        lines.append(f"{name:<26}{s['n']:>7}{s['p50']:>10.3f}{s['p99']:>10.3f}")
    lines += [f"{k}: {v}" for k, v in result.items() if k.endswith("_per_s") or "_per_s_" in k]
    if "versus" in result:
        v = result["versus"]
        lines.append(
            f"node --search ({v['budget_ms']} ms) vs node default, {v['games']} "
            f"two-player matches: win rate {v['win_rate']:.3f} "
            f"[{v['ci95'][0]:.3f}, {v['ci95'][1]:.3f}] ({v['wins']} wins, "
            f"{v['ties']} shared, {v['losses']} losses)"
        )
    return lines


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Returns the Wilson score interval of a proportion (95% by default)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (round(centre - half, 3), round(centre + half, 3))


_RANKS = re.compile(r"match_ended .*?ranks=(\[[0-9,]*\])")


def versus(games: int, budget_ms: int = 200, policy: str = "greedy") -> dict[str, Any]:
    """Returns the Node.js bot's ``--search`` results against its default policy over
    ``games`` two-player matches on a real server (see the module docstring)."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not installed")
    wins = ties = losses = 0
    seconds: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        env = {**os.environ, "MAMMAMIA_ORGANISER_KEY": "bench-organiser-key"}
        with (
            _process(
                [*_mammamia(), "serve", "--db", str(directory / "arena.db")],
                directory,
                "arena",
                env,
            ) as arena_port,
            _process([*_mammamia(), "rules-serve"], directory, "rules") as rules_port,
        ):
            server = f"127.0.0.1:{arena_port}"
            for game in range(games):
                created = subprocess.run(
                    [
                        *_mammamia(),
                        "match",
                        "create",
                        "--server",
                        server,
                        "--players",
                        "2",
                        "--seed",
                        str(game),
                    ],
                    capture_output=True,
                    text=True,
                    env=env,
                    check=True,
                    timeout=60,
                )
                tokens = json.loads(created.stdout)["tokens"]
                me = game % 2
                logs = [directory / f"seat{s}.log" for s in (0, 1)]
                started = time.perf_counter()
                bots = []
                for s in (0, 1):
                    argv = [node, str(NODE_BOT), "--server", server, f"--token={tokens[s]}"]
                    if s == me:
                        argv += [
                            "--name",
                            "search",
                            "--search",
                            "--search-ms",
                            str(budget_ms),
                            "--search-policy",
                            policy,
                            "--rules",
                            f"127.0.0.1:{rules_port}",
                        ]
                    bots.append(
                        subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=logs[s].open("wb"))
                    )
                for bot in bots:
                    bot.wait(timeout=600)
                seconds.append(time.perf_counter() - started)
                found = _RANKS.search(logs[me].read_text())
                if found is None:
                    raise RuntimeError(f"match {game}: no end in {logs[me].read_text()[-2000:]}")
                ranks = json.loads(found.group(1))
                if ranks[me] == 1 and ranks[1 - me] == 1:
                    ties += 1
                elif ranks[me] == 1:
                    wins += 1
                else:
                    losses += 1
    score = wins + ties / 2
    return {
        "games": games,
        "budget_ms": budget_ms,
        "policy": policy,
        "wins": wins,
        "ties": ties,
        "losses": losses,
        "win_rate": round(score / games, 3),
        "ci95": wilson(score, games),
        "seconds_per_match": round(sum(seconds) / len(seconds), 1),
    }


def main(argv: list[str] | None = None) -> int:
    """Prints the figures (and writes them as JSON with ``--out``); returns 0."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.rules_service",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="time per call kind (default 3)")
    parser.add_argument("--players", type=int, default=3, help="players (default 3)")
    parser.add_argument(
        "--versus",
        type=int,
        default=0,
        metavar="N",
        help="also play N two-player matches: node --search against node",
    )
    parser.add_argument(
        "--budget-ms",
        type=int,
        default=200,
        help="the searching bot's time per decision (default 200)",
    )
    parser.add_argument("--policy", default="greedy", help="its playout policy (default greedy)")
    parser.add_argument("--out", metavar="FILE", help="write the figures as JSON")
    args = parser.parse_args(argv)
    result = (
        run(args.seconds, args.players)
        if args.seconds > 0
        else {
            "players": args.players,
            "mid_game_actions": MID_GAME,
            "history_events": 0,
            "latency_ms": {},
        }
    )
    if args.versus:
        result["versus"] = versus(args.versus, args.budget_ms, args.policy)
    print("\n".join(table(result)))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
