"""The Java kit (kits/java): Maven builds it from its pinned pom.xml (the stubs generated
from protos/ at build time), its starter bot passes every scenario of the conformance
kit, single-seat and ladder, and it plays a real server's ladder over TLS trusting a CA
file: it registers its name (the key written to its key file, mode 0600), finishes
rated matches against a Python ladder bot, and exits 0 on SIGTERM.

Without `java` and `mvn` the tests are skipped with the reason. The jar is built here
only when it is missing or older than its sources (`make install` builds it first).
"""

from __future__ import annotations

import fcntl
import json
import shlex
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.conformance import cli

ROOT = Path(__file__).resolve().parents[2]
MAMMAMIA = ROOT / ".venv" / "bin" / "mammamia"
KIT = ROOT / "kits" / "java"
JAR = KIT / "target" / "mammamia-bot.jar"
BOT = KIT / "bot"
BUILD_TIMEOUT_S = 1200
NAME = "java-ladder"


def sources() -> list[Path]:
    """Returns the files the jar is built from: the pom, the Java sources, the contract."""
    return [
        KIT / "pom.xml",
        ROOT / "protos" / "mammamia" / "v1" / "arena.proto",
        *sorted((KIT / "src").rglob("*.java")),
    ]


@pytest.fixture(scope="module")
def java_bot() -> list[str]:
    """Returns the command that runs the kit's starter bot, building the jar first when it
    is missing or stale; skips the test without `java` or `mvn`."""
    java, mvn = shutil.which("java"), shutil.which("mvn")
    if java is None or mvn is None:
        pytest.skip("java or mvn is not installed: the Java kit cannot be built here")
    (KIT / "target").mkdir(exist_ok=True)
    # Two test workers may get here at once: one builds, the other waits for it.
    with open(KIT / "target" / ".build-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        newest = max(path.stat().st_mtime for path in sources())
        if not JAR.exists() or JAR.stat().st_mtime < newest:
            done = subprocess.run(
                [mvn, "-B", "-q", "-f", str(KIT / "pom.xml"), "package"],
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
            assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return [str(BOT)]


def test_the_java_bot_passes_every_conformance_scenario_single_seat_and_ladder(
    java_bot: list[str],
) -> None:
    bot = " ".join(shlex.quote(part) for part in java_bot)
    done = subprocess.run(
        [
            str(MAMMAMIA),
            "conformance",
            *("--client", f"{bot} --server {{server}} --token {{token}}"),
            *(
                "--ladder-client",
                f"{bot} --server {{server}} --ladder --name {{name}} --key-file {{key_file}}",
            ),
            *("--json", "--timeout", "60"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        check=False,
    )
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    found = {row["name"]: row for row in report.get("scenarios", [])}
    assert set(found) == set(cli.NAMES + cli.LADDER_NAMES), done.stderr[-3000:]
    failed = [
        f"{n}: {r['why']}\n  " + "\n  ".join(r["stderr_tail"])
        for n, r in found.items()
        if not r["passed"]
    ]
    assert done.returncode == 0 and report["passed"] and not failed, "\n".join(failed)


def finished_matches(address: str, ca: Path, name: str) -> list[Any]:
    """Returns the finished ladder matches of ``name`` on the TLS server at ``address``."""
    credentials = grpc.ssl_channel_credentials(ca.read_bytes())
    with grpc.secure_channel(address, credentials) as channel:
        ladder = pb_grpc.LadderStub(channel)
        matches = ladder.Matches(pb.MatchesRequest(name=name), timeout=10).matches
    return [m for m in matches if m.status == pb.MATCH_STATUS_FINISHED]


def test_the_java_bot_registers_and_plays_the_ladder_over_tls(
    java_bot: list[str],
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., Any],
    self_signed_certificate: tuple[Path, Path],
    tmp_path: Path,
) -> None:
    key, cert = self_signed_certificate
    server = start_server(tls_cert=cert, tls_key=key, ladder_players="2-2", ladder_concurrency=2)
    ladder_bots(server.address, {"py-random": "random"}, "--tls-ca", str(cert))
    key_file = tmp_path / "java.key"
    log = tmp_path / "java.log"
    with open(log, "wb") as err:
        bot = subprocess.Popen(
            [
                *java_bot,
                "--server",
                server.address,
                "--tls-ca",
                str(cert),
                "--ladder",
                "--name",
                NAME,
                "--key-file",
                str(key_file),
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            deadline = time.monotonic() + 90
            while len(finished_matches(server.address, cert, NAME)) < 2:
                assert bot.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.5)
            bot.send_signal(signal.SIGTERM)
            assert bot.wait(timeout=10) == 0, log.read_text()[-3000:]
        finally:
            if bot.poll() is None:
                bot.kill()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.read_text().strip()
    text = log.read_text()
    assert " info registered " in text and " info match_ended " in text
    # Every finished match was the bot's own play: none of its decisions defaulted.
    assert " warn deadline_passed " not in text, text[-3000:]
