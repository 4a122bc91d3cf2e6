"""The network loop against a real server: full matches, views, dropped links, Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import threading
import time
from typing import Any

import pytest
from structlog.testing import capture_logs

from bots.counter import CounterBot
from bots.greedy import GreedyBot
from bots.random_bot import RandomBot
from client_sdk import SeatRefused, View
from client_sdk.connection import Backoff, play_seat
from mammamia import view_of

from .support import MAMMAMIA, Link, Recording, create_match, match_record

TIMEOUT_S = 60


def local_views(record: Any, seat: int) -> list[View]:
    """Returns the views the rules give ``seat`` at each of its decisions."""
    return [view_of(s, seat) for s in record.states() if s.to_act == seat]


def test_three_bots_play_a_match_and_see_what_the_rules_show_them(server: Any) -> None:
    match_id, tokens = create_match(server, 3, seed=21)
    bots = [Recording(RandomBot()), Recording(GreedyBot()), Recording(CounterBot())]

    async def main() -> list[Any]:
        return list(
            await asyncio.gather(
                *(
                    play_seat(bot, server.address, token)
                    for bot, token in zip(bots, tokens, strict=True)
                )
            )
        )

    results = asyncio.run(asyncio.wait_for(main(), TIMEOUT_S))
    record = match_record(server, match_id)
    final = record.replay()
    for seat, (bot, result) in enumerate(zip(bots, results, strict=True)):
        assert (result.match_id, result.seat, result.status) == (match_id, seat, "finished")
        assert result.winners == tuple(final.winners())
        assert result.delivered == tuple(len(d) for d in final.delivered)
        assert result.replaced == 0
        # The network views, history included, are exactly the rules' views of the seat.
        assert bot.views == local_views(record, seat)
        assert bot.started == bot.views[0]
        assert bot.ended is not None and bot.ended.phase == "over"
        assert bot.ended.history == view_of(final, seat).history
        assert bot.ended.seats == view_of(final, seat).seats
    assert record.meta["names"] == ["random", "greedy", "counter"]
    assert not any(record.meta["timeouts"])


def test_a_cut_link_does_not_lose_the_seat(server: Any) -> None:
    match_id, tokens = create_match(server, 3, seed=5)
    link = Link(server.port)
    cut_after = 4
    cut_once = asyncio.Event()
    cut_done = threading.Event()

    class CutsTheLink(GreedyBot):
        """A greedy bot whose link is cut while it thinks, after a few decisions."""

        decisions = 0

        def turn(self, view: View) -> Any:
            CutsTheLink.decisions += 1
            if CutsTheLink.decisions == cut_after:
                loop.call_soon_threadsafe(cut_once.set)
                cut_done.wait(TIMEOUT_S)
            return super().turn(view)

    async def outage() -> None:
        await cut_once.wait()
        await link.cut()
        await asyncio.sleep(0.2)
        cut_done.set()
        await asyncio.sleep(0.3)
        await link.open()

    async def main() -> list[Any]:
        await link.open()
        cutter = asyncio.create_task(outage())
        results = await asyncio.gather(
            play_seat(CutsTheLink(), link.address, tokens[0], backoff=Backoff(first=0.05)),
            play_seat(RandomBot(), server.address, tokens[1]),
            play_seat(RandomBot(), server.address, tokens[2]),
        )
        await cutter
        await link.close()
        return list(results)

    loop = asyncio.new_event_loop()
    try:
        with capture_logs() as logs:
            results = loop.run_until_complete(asyncio.wait_for(main(), TIMEOUT_S))
    finally:
        loop.close()
    assert link.cuts == 1
    events = [e["event"] for e in logs if e.get("seat") in (0, None)]
    assert "seat_rejoined" in events
    assert {"connection_lost", "stream_closed"} & set(events)
    assert [r.status for r in results] == ["finished"] * 3
    record = match_record(server, match_id)
    # Seat 0 played on after the cut: more of its decisions than before it, and it was
    # never handed to the server's autopilot.
    assert CutsTheLink.decisions > cut_after
    assert not [a for a in record.meta["autopilot"] if a["seat"] == 0]
    turns_of_seat0 = sum(1 for seat, a in record.actions if seat == 0 and hasattr(a, "draw"))
    timeouts = [t for t in record.meta["timeouts"] if t["seat"] == 0]
    assert CutsTheLink.decisions + len(timeouts) == turns_of_seat0


def bot_process(server: Any, spec: str, token: str, *extra: str) -> subprocess.Popen[str]:
    # A token may start with "-", so it goes as --token=TOKEN.
    return subprocess.Popen(
        [
            MAMMAMIA,
            "bot",
            spec,
            "--server",
            server.address,
            f"--token={token}",
            "--log-format",
            "json",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_line(proc: subprocess.Popen[str], event: str, count: int = 1) -> list[dict[str, Any]]:
    """Returns the log lines read from a bot's stderr up to the ``count``-th ``event``."""
    assert proc.stderr is not None
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        entry = json.loads(line)
        seen.append(entry)
        if sum(1 for e in seen if e["event"] == event) >= count:
            return seen
    raise AssertionError(f"no {count} x {event!r} in {seen}")


def test_a_restarted_bot_process_takes_its_seat_back(server: Any) -> None:
    match_id, tokens = create_match(server, 2, seed=8)
    # A random bot would answer old decisions differently, so replaying them would show.
    first = bot_process(server, "random", tokens[0], "--verbose")
    other = bot_process(server, "random", tokens[1])
    try:
        wait_for_line(first, "decision_answered", 3)
        first.kill()
        first.wait(timeout=TIMEOUT_S)
        again = bot_process(server, "random", tokens[0])
        out, err = again.communicate(timeout=TIMEOUT_S)
        assert again.returncode == 0, err
        # It replayed the match from the start without answering decisions long taken.
        events = [json.loads(line)["event"] for line in err.splitlines()]
        assert "answer_refused" not in events and "bot_decision_replaced" not in events
        result = json.loads(out)
        assert (result["match"], result["seat"], result["status"]) == (match_id, 0, "finished")
        other_out, _ = other.communicate(timeout=TIMEOUT_S)
        assert json.loads(other_out)["winners"] == result["winners"]
    finally:
        for proc in (first, other):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            # The killed one's pipes were never read to their end (communicate
            # closes them): closed here, not left to the collector.
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
    record = match_record(server, match_id)
    assert not [a for a in record.meta["autopilot"] if a["seat"] == 0]


def test_ctrl_c_stops_a_bot_cleanly(server: Any) -> None:
    _, tokens = create_match(server, 2, seed=3)
    proc = bot_process(server, "greedy", tokens[0])
    try:
        wait_for_line(proc, "seat_joined")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert json.loads(err.strip().splitlines()[-1])["event"] == "bot_stopped"
    assert out == ""


def test_an_unknown_token_is_refused_in_one_line(server: Any) -> None:
    proc = subprocess.run(
        [MAMMAMIA, "bot", "random", "--server", server.address, "--token", "not-a-token"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("mammamia bot: refused:")
    with pytest.raises(SeatRefused, match="UNAUTHENTICATED"):
        asyncio.run(play_seat(RandomBot(), server.address, "not-a-token"))


@pytest.mark.skipif(not os.path.exists("/usr/bin/openssl"), reason="needs openssl")
def test_bots_play_over_tls(start_server: Any, self_signed_certificate: Any) -> None:
    key, cert = self_signed_certificate
    server = start_server(tls_cert=cert, tls_key=key)
    created = subprocess.run(
        [
            MAMMAMIA,
            "match",
            "create",
            "--server",
            server.address,
            "--players",
            "2",
            "--organiser-key",
            server.organiser_key,
            "--tls-ca",
            str(cert),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=True,
    )
    tokens = json.loads(created.stdout)["tokens"]
    bots: list[subprocess.Popen[str]] = []
    try:
        bots += [
            subprocess.Popen(
                [
                    MAMMAMIA,
                    "bot",
                    spec,
                    "--server",
                    server.address,
                    f"--token={token}",
                    "--tls-ca",
                    str(cert),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for spec, token in zip(("counter", "greedy"), tokens, strict=True)
        ]
        for proc in bots:
            out, err = proc.communicate(timeout=TIMEOUT_S)
            assert proc.returncode == 0, err
            assert json.loads(out)["status"] == "finished"
    finally:
        for proc in bots:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_a_bot_too_slow_for_its_deadline_is_answered_for_in_time(server: Any) -> None:
    match_id, tokens = create_match(server, 2, 4, "--deadline", "1.5")

    class Dawdler(GreedyBot):
        """Thinks far too long about its first turn."""

        name = "dawdler"
        calls = 0

        def turn(self, view: View) -> Any:
            Dawdler.calls += 1
            if Dawdler.calls == 1:
                time.sleep(2.5)
            return super().turn(view)

    async def main() -> list[Any]:
        return list(
            await asyncio.gather(
                play_seat(Dawdler(), server.address, tokens[0]),
                play_seat(RandomBot(), server.address, tokens[1]),
            )
        )

    with capture_logs() as logs:
        results = asyncio.run(asyncio.wait_for(main(), TIMEOUT_S))
    assert [r.status for r in results] == ["finished", "finished"]
    assert results[0].replaced >= 1
    slow = [
        e
        for e in logs
        if e["event"] == "bot_decision_replaced" and e["fault"].startswith("no answer within")
    ]
    assert slow and slow[0]["bot"] == "dawdler"
    # The safe answer went in before the deadline: the server did not step in.
    record = match_record(server, match_id)
    assert slow[0]["decision"] not in {t["decision"] for t in record.meta["timeouts"]}


def test_a_late_bot_is_never_called_twice_at_once(server: Any) -> None:
    _, tokens = create_match(server, 2, 6, "--deadline", "0.4")

    class Sleeper(GreedyBot):
        """Sleeps past its deadline on its first decisions; counts calls inside it."""

        name = "sleeper"
        calls = 0
        inside = 0
        most_inside = 0
        lock = threading.Lock()

        def _enter(self) -> None:
            with Sleeper.lock:
                Sleeper.calls += 1
                Sleeper.inside += 1
                Sleeper.most_inside = max(Sleeper.most_inside, Sleeper.inside)
                calls = Sleeper.calls
            if calls <= 2:
                time.sleep(0.6)
            with Sleeper.lock:
                Sleeper.inside -= 1

        def turn(self, view: View) -> Any:
            self._enter()
            return super().turn(view)

        def resolve(self, view: View) -> Any:
            self._enter()
            return super().resolve(view)

    class Steady(RandomBot):
        """Takes a moment over each decision, so the match outlasts the late calls."""

        def turn(self, view: View) -> Any:
            time.sleep(0.1)
            return super().turn(view)

    async def main() -> list[Any]:
        return list(
            await asyncio.gather(
                play_seat(Sleeper(), server.address, tokens[0]),
                play_seat(Steady(), server.address, tokens[1]),
            )
        )

    with capture_logs() as logs:
        results = asyncio.run(asyncio.wait_for(main(), TIMEOUT_S))
    assert [r.status for r in results] == ["finished", "finished"]
    assert Sleeper.most_inside == 1
    busy = [
        e
        for e in logs
        if e["event"] == "bot_decision_replaced"
        and e["fault"] == "still deciding an earlier decision"
    ]
    assert busy and all(e["bot"] == "sleeper" for e in busy)
    assert Sleeper.calls > 2  # called again once the late calls were over
