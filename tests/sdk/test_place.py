"""Bots as places (`mammamia bot SPEC --place`): each prints its place's token, and
`mammamia match create --places` starts matches on them, one after another, with
no token handed to any bot."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from typing import Any

from .support import MAMMAMIA, create_match, match_record

TIMEOUT_S = 60


def finished(server: Any, match_id: str) -> bool:
    listed = subprocess.run(
        [
            MAMMAMIA,
            "match",
            "list",
            "--server",
            server.address,
            "--organiser-key",
            server.organiser_key,
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return any(
        entry["matchId"] == match_id and entry["status"] == "MATCH_STATUS_FINISHED"
        for entry in map(json.loads, listed.stdout.splitlines())
    )


def test_bots_started_as_places_play_every_match_an_organiser_seats_them_in(
    server: Any, tmp_path: Any
) -> None:
    with open(tmp_path / "0.log", "wb") as log0, open(tmp_path / "1.log", "wb") as log1:
        bots = [
            subprocess.Popen(
                [
                    MAMMAMIA,
                    "bot",
                    spec,
                    "--server",
                    server.address,
                    "--place",
                    "--log-format",
                    "json",
                ],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
            for spec, log in (("random", log0), ("greedy", log1))
        ]
        try:
            places = [
                json.loads(b.stdout.readline())["place"]  # type: ignore[union-attr]
                for b in bots
            ]
            made = [
                create_match(server, 2, seed, "--places", ",".join(order))[0]
                for seed, order in ((31, places), (32, places[::-1]))
            ]
            deadline = time.monotonic() + TIMEOUT_S
            while not all(finished(server, m) for m in made):
                assert time.monotonic() < deadline, "the matches on places did not finish"
                time.sleep(0.2)
            # Each bot played its seat of both: the names are the bots' own.
            assert match_record(server, made[0]).meta["names"] == ["random", "greedy"]
            assert match_record(server, made[1]).meta["names"] == ["greedy", "random"]
            for b in bots:
                b.send_signal(signal.SIGINT)
            assert [b.wait(TIMEOUT_S) for b in bots] == [130, 130]
        finally:
            for b in bots:
                b.kill()
                b.wait()
                if b.stdout is not None:
                    b.stdout.close()  # read only to its first line
    for i in range(2):
        ended = [
            json.loads(line)
            for line in (tmp_path / f"{i}.log").read_text().splitlines()
            if '"match_ended"' in line
        ]
        assert {e["match"] for e in ended} == set(made)


def test_a_bot_takes_exactly_one_way_to_its_seats(server: Any) -> None:
    _, [token, _] = create_match(server, 2)
    both = subprocess.run(
        [MAMMAMIA, "bot", "random", "--server", server.address, "--place", "--token", token],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert both.returncode == 2
    assert "give one of --token TOKEN, --ladder --name NAME and --place" in both.stderr
