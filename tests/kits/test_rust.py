"""The Rust kit (kits/rust): its unit tests pass (`cargo test`), and its starter bot,
built by cargo from the kit's lock file, passes every scenario of the conformance
kit (single-seat and ladder), plays a real server's ladder against a Python bot
(registering its name into a key file), leaves on SIGTERM with exit 0, stops with
one line and a non-zero code when the ladder refuses its key, and plays a seat over
TLS trusting a CA file.

Skipped, with the reason, where cargo is not installed (`make test` builds the kit
first through its stamp; the build here is then cargo's no-op check).
"""

from __future__ import annotations

import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.conformance import cli
from tests.kits.conftest import ROOT, Conformance, failures, tls_seat_against_random

KIT = ROOT / "kits" / "rust"
BUILD_TIMEOUT_S = 1200
LADDER_TIMEOUT_S = 90


@pytest.fixture(scope="module")
def starter() -> Path:
    """Returns the starter bot's executable, built by cargo; skips without cargo."""
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("cargo is not installed: the Rust kit cannot be built here")
    build = subprocess.run(
        [cargo, "build", "--locked", "--quiet", "--manifest-path", str(KIT / "Cargo.toml")],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    return KIT / "target" / "debug" / "starter"


def test_the_kits_own_unit_tests_pass(starter: Path) -> None:
    cargo = shutil.which("cargo")
    assert cargo is not None  # the starter fixture skips without it
    done = subprocess.run(
        [cargo, "test", "--locked", "--quiet", "--manifest-path", str(KIT / "Cargo.toml")],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    ran = [int(n) for n in re.findall(r"test result: ok\. (\d+) passed", done.stdout)]
    assert sum(ran) > 0, done.stdout[-3000:]


def test_the_starter_passes_every_conformance_scenario_single_seat_and_ladder(
    starter: Path, conformance: Conformance
) -> None:
    bot = shlex.quote(str(starter))
    code, report, err = conformance(
        f"{bot} --server {{server}} --token {{token}}",
        *(
            "--ladder-client",
            f"{bot} --server {{server}} --ladder --name {{name}} --key-file {{key_file}}",
        ),
    )
    names = {r["name"] for r in report.get("scenarios", [])}
    assert names == {*cli.NAMES, *cli.LADDER_NAMES}, err[-3000:]
    assert code == 0 and report["passed"], failures(report)


def ladder_matches(address: str, name: str) -> list[Any]:
    """Returns the ladder's matches of bot `name`, newest first."""
    with grpc.insecure_channel(address) as channel:
        reply = pb_grpc.LadderStub(channel).Matches(pb.MatchesRequest(name=name), timeout=10)
        return list(reply.matches)


def test_the_starter_plays_the_ladder_and_leaves_on_sigterm(
    starter: Path, start_server: Any, ladder_bots: Any, tmp_path: Path
) -> None:
    server = start_server(ladder_players="2")
    ladder_bots(server.address, {"py-random": "random"})
    key_file = tmp_path / "rust.key"
    log = tmp_path / "starter.log"
    command = [str(starter), "--server", server.address, "--ladder", "--name", "rust-starter"]
    with open(log, "wb") as err:
        bot = subprocess.Popen([*command, "--key-file", str(key_file)], stderr=err)
    try:
        deadline = time.monotonic() + LADDER_TIMEOUT_S
        finished: list[Any] = []
        while len(finished) < 2 and time.monotonic() < deadline and bot.poll() is None:
            time.sleep(0.5)
            finished = [
                m
                for m in ladder_matches(server.address, "rust-starter")
                if m.status == pb.MATCH_STATUS_FINISHED
            ]
        assert len(finished) >= 2, log.read_text()[-3000:]
        # Registered on first use: the key is in the file, readable by its owner alone.
        assert key_file.stat().st_mode & 0o777 == 0o600
        assert key_file.read_text().strip()
        bot.send_signal(signal.SIGTERM)
        assert bot.wait(timeout=5) == 0, log.read_text()[-3000:]
    finally:
        if bot.poll() is None:
            bot.kill()
    text = log.read_text()
    assert "event=registered" in text and "event=entered" in text
    assert "event=seat_taken call=PlayMatches" in text

    # A key the ladder refuses: one line saying so, and a non-zero code, at once.
    key_file.write_text("not-the-key\n")
    refused = subprocess.run(
        [*command, "--key-file", str(key_file)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert refused.returncode == 1
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("starter: the ladder refused the bot: "), refused.stderr[-2000:]


def leaf_certificate(directory: Path) -> tuple[Path, Path]:
    """Returns (key, certificate): new PEM files of a self-signed certificate for
    `localhost` that is no CA (rustls, which the kit's TLS uses, refuses a server
    certificate with CA:TRUE, the default of `openssl req -x509`)."""
    key, cert = directory / "leaf-key.pem", directory / "leaf-cert.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"),
            *("-addext", "basicConstraints=critical,CA:FALSE"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return key, cert


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_the_starter_plays_a_seat_over_tls_with_a_ca_file(
    starter: Path, start_server: Any, tmp_path: Path
) -> None:
    key, cert = leaf_certificate(tmp_path)
    server = start_server(tls_cert=cert, tls_key=key)
    with tls_seat_against_random(server, cert) as seat:
        mine = subprocess.run(
            [str(starter), *seat, "--retry-for", "10"],
            capture_output=True,
            text=True,
            timeout=LADDER_TIMEOUT_S,
            check=False,
        )
        assert mine.returncode == 0, mine.stderr[-3000:]
        assert "event=match_ended status=Finished" in mine.stderr
