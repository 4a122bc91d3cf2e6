"""The command line: `mammamia match create/record/list` against a real server, and
`mammamia serve` start-up behaviour (generated organiser key, plaintext warning, TLS)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import pytest

from .client import MAMMAMIA, play, random_options

if TYPE_CHECKING:
    from tests.conftest import RunningServer
from collections.abc import Callable


def mammamia(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MAMMAMIA), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_match_create_and_record(server: RunningServer, tmp_path: Path) -> None:
    done = mammamia(
        "match",
        "create",
        "--server",
        server.address,
        "--players",
        "2",
        "--seed",
        "8",
        "--deadline",
        "2",
        "--names",
        "ann,bo",
        env={"MAMMAMIA_ORGANISER_KEY": server.organiser_key},
    )
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)
    assert set(created) == {"match", "tokens"} and len(created["tokens"]) == 2

    async def go() -> None:
        async with grpc.aio.insecure_channel(server.address) as channel:
            await asyncio.gather(
                *(play(channel, t, random_options(i)) for i, t in enumerate(created["tokens"]))
            )

    asyncio.run(go())

    done = mammamia(
        "match",
        "record",
        "--server",
        server.address,
        created["match"],
        "--organiser-key",
        server.organiser_key,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["seed"] == 8 and record["meta"]["names"] == ["ann", "bo"]
    assert record["meta"]["deadline_ms"] == 2000
    path = tmp_path / "r.json"
    path.write_text(done.stdout)
    state = json.loads(mammamia("state", str(path)).stdout)
    assert state["phase"] == "over" and state["winners"]

    listed = mammamia(
        "match", "list", "--server", server.address, "--organiser-key", server.organiser_key
    )
    assert json.loads(listed.stdout.splitlines()[0])["matchId"] == created["match"]

    # Refusals are one line on stderr and a non-zero exit.
    for args, words in [
        (("--organiser-key", "wrong"), "PERMISSION_DENIED"),
        ((), "no operator key"),
    ]:
        done = mammamia(
            "match",
            "create",
            "--server",
            server.address,
            "--players",
            "2",
            *args,
            env={"MAMMAMIA_ORGANISER_KEY": ""},
        )
        assert done.returncode == 1 and words in done.stderr and not done.stdout
    done = mammamia(
        "match",
        "create",
        "--server",
        server.address,
        "--players",
        "9",
        "--organiser-key",
        server.organiser_key,
    )
    assert done.returncode == 1 and "R-SETUP-1" in done.stderr


def _wait_for(path: Path, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, "the server exited"
        assert time.monotonic() < deadline, f"no {path.name} after {timeout} s"
        time.sleep(0.02)


def test_serve_generates_a_key_and_warns_beyond_loopback(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MAMMAMIA_DB": str(tmp_path / "env.db"),
        "MAMMAMIA_PORT": "0",
        "MAMMAMIA_HOST": "0.0.0.0",
        "MAMMAMIA_LOG_FORMAT": "json",
    }
    env.pop("MAMMAMIA_ORGANISER_KEY", None)
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        process = subprocess.Popen(
            [str(MAMMAMIA), "serve", "--port-file", str(tmp_path / "port")],
            stdout=out,
            stderr=err,
            env=env,
        )
    try:
        _wait_for(tmp_path / "port", process)
        port = int((tmp_path / "port").read_text())
        [line] = (tmp_path / "out").read_text().splitlines()
        assert line.startswith("organiser key: ")
        key = line.removeprefix("organiser key: ")
        assert len(key) >= 22
        done = mammamia(
            "match",
            "create",
            "--server",
            f"127.0.0.1:{port}",
            "--players",
            "3",
            env={"MAMMAMIA_ORGANISER_KEY": key},
        )
        assert done.returncode == 0, done.stderr
    finally:
        process.terminate()
        assert process.wait(timeout=60) == 0
    logs = [json.loads(x) for x in (tmp_path / "err").read_text().splitlines()]
    events = {e["event"] for e in logs}
    assert {"serving", "plaintext_beyond_loopback", "match_created"} <= events
    assert key not in (tmp_path / "err").read_text()
    assert (tmp_path / "env.db").exists()


def test_serve_refuses_half_a_tls_pair(tmp_path: Path) -> None:
    done = mammamia(
        "serve",
        "--port",
        "0",
        "--db",
        str(tmp_path / "x.db"),
        "--tls-cert",
        str(tmp_path / "cert.pem"),
    )
    assert done.returncode == 2 and "--tls-key" in done.stderr


@pytest.mark.skipif(not os.path.exists("/usr/bin/openssl"), reason="needs openssl")
def test_serve_with_tls(
    start_server: Callable[..., RunningServer], self_signed_certificate: tuple[Path, Path]
) -> None:
    key, cert = self_signed_certificate
    server = start_server(tls_cert=cert, tls_key=key)
    done = mammamia(
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
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["match"]
    # Plaintext is not spoken on a TLS port.
    done = mammamia(
        "match",
        "create",
        "--server",
        server.address,
        "--players",
        "2",
        "--organiser-key",
        server.organiser_key,
    )
    assert done.returncode == 1
    assert server.stop() == 0


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (("--deadline-ms", "0"), {}, "--deadline-ms"),
        (("--deadline-ms", "-5"), {}, "--deadline-ms"),
        ((), {"MAMMAMIA_DEADLINE_MS": "0"}, "MAMMAMIA_DEADLINE_MS"),
        (("--port", "65536"), {}, "--port"),
        (("--start-timeout", "0"), {}, "--start-timeout"),
        ((), {"MAMMAMIA_DRAIN_SECONDS": "nan"}, "MAMMAMIA_DRAIN_SECONDS"),
        (("--ladder-deadline-ms", "-1"), {}, "--ladder-deadline-ms"),
        ((), {"MAMMAMIA_LADDER_CONCURRENCY": "0"}, "MAMMAMIA_LADDER_CONCURRENCY"),
        (("--ladder-start-timeout", "inf"), {}, "--ladder-start-timeout"),
        ((), {"MAMMAMIA_LADDER_PLAYERS": "1-6"}, "MAMMAMIA_LADDER_PLAYERS"),
    ],
)
def test_serve_refuses_bad_numbers_at_start_up(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], named: str
) -> None:
    db = tmp_path / "never.db"
    done = mammamia("serve", "--db", str(db), "--organiser-key", "k", *args, env=env, timeout=30)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and named in done.stderr, done.stderr
    assert not db.exists()


def test_a_bad_environment_variable_leaves_help_working() -> None:
    bad = {
        "MAMMAMIA_PORT": "abc",
        "MAMMAMIA_START_TIMEOUT": "soon",
        "MAMMAMIA_LADDER_DEADLINE_MS": "x",
    }
    done = mammamia("serve", "--help", env=bad)
    assert done.returncode == 0 and "--deadline-ms" in done.stdout, done.stderr
    # Given on the command line, the flag wins and the variable is not read.
    done = mammamia("serve", "--port", "x", env=bad)
    assert done.returncode == 2 and "--port: 'x'" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--deadline", "0"), "--deadline"),
        (("--deadline", "-1"), "--deadline"),
        (("--deadline", "nan"), "--deadline"),
        (("--deadline", "1e12"), "--deadline"),
        (("--seed", "-1"), "--seed"),
        (("--seed", str(2**63)), "--seed"),
        (("--time-bank", "-2"), "--time-bank"),
    ],
)
def test_match_create_refuses_bad_numbers(args: tuple[str, ...], named: str) -> None:
    # Refused before any connection: the address is never dialled.
    done = mammamia(
        "match",
        "create",
        "--server",
        "127.0.0.1:9",
        "--organiser-key",
        "k",
        "--players",
        "2",
        *args,
    )
    assert done.returncode == 2 and not done.stdout
    assert len(done.stderr.splitlines()) == 1 and named in done.stderr, done.stderr
