"""Operators with names: the file `mammamia admin operators add` writes, a server
started with it, each call made as the operator its key names and appended to the
audit trail with that name; a key that names no one is refused."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from mammamia_pb import admin_pb2 as apb
from mammamia_pb import admin_pb2_grpc as apb_grpc
from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.operators import ORGANISER, Operators, OperatorsError, add, key_hash, load
from tests.conftest import ORGANISER_KEY
from tests.ladder.conftest import MAMMAMIA


def mammamia(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MAMMAMIA), *args], capture_output=True, text=True, timeout=60, check=False
    )


def admin(address: str, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    return mammamia("admin", *args, "--server", address, "--operator-key", key)


def log(address: str, key: str = ORGANISER_KEY) -> list[dict[str, Any]]:
    done = admin(address, key, "log", "--json", "--page-size", "2")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_file_keeps_hashes_and_names_resolve(tmp_path: Path) -> None:
    path = tmp_path / "operators.toml"
    alice = add(path, "alice")
    bob = add(path, "bob")
    text = path.read_text(encoding="utf-8")
    assert alice not in text and bob not in text
    hashes = load(path)
    assert hashes == {"alice": key_hash(alice), "bob": key_hash(bob)}
    operators = Operators("the-organiser-key", hashes)
    assert operators.resolve(alice) == "alice"
    assert operators.resolve(bob) == "bob"
    assert operators.resolve("the-organiser-key") == ORGANISER
    assert operators.resolve("x" * 48) is None
    assert operators.resolve("") is None
    with pytest.raises(OperatorsError, match="exists already"):
        add(path, "alice")
    with pytest.raises(OperatorsError, match="the server's own"):
        add(path, "server")
    with pytest.raises(OperatorsError, match="letters, digits"):
        add(path, "no spaces")


def test_a_bad_operators_file_stops_the_server(tmp_path: Path) -> None:
    path = tmp_path / "operators.toml"
    path.write_text('[operators]\nalice = "plain-key"\n', encoding="utf-8")
    done = mammamia(
        "serve", "--port", "0", "--db", str(tmp_path / "a.db"), "--operators", str(path)
    )
    assert done.returncode == 2
    assert "alice" in done.stderr and "sha256" in done.stderr


def test_calls_are_made_and_audited_as_named_operators(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    path = tmp_path / "operators.toml"
    added = mammamia("admin", "operators", "add", "alice", "--file", str(path))
    assert added.returncode == 0, added.stderr
    alice = added.stdout.split()[-1]
    assert load(path) == {"alice": key_hash(alice)}
    server = start_server(operators=path, no_web=True)

    paused = admin(server.address, alice, "pause", "--reason", "a slow bot", "--json")
    assert paused.returncode == 0, paused.stderr
    data = json.loads(paused.stdout)
    assert data["operator"] == "alice"
    assert {s["name"]: s["on"] for s in data["switches"]} == {
        "ladder_paused": True,
        "registration_closed": False,
    }
    created = mammamia(
        "match", "create", "--players", "2", "--server", server.address,
        "--organiser-key", ORGANISER_KEY,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    match_id = json.loads(created.stdout)["match"]
    resumed = admin(server.address, alice, "resume", "--reason", "the bot was fixed")
    assert resumed.returncode == 0, resumed.stderr
    # Resuming again changes nothing, and is not on the trail.
    assert admin(server.address, alice, "resume", "--reason", "again").returncode == 0

    entries = log(server.address, alice)  # pages of 2: three entries, two pages
    assert [(e["operator"], e["action"], e["target"], e["reason"]) for e in entries] == [
        ("alice", "ladder.pause", "ladder_paused", "a slow bot"),
        (ORGANISER, "match.create", match_id, ""),
        ("alice", "ladder.resume", "ladder_paused", "the bot was fixed"),
    ]
    assert [e["seq"] for e in entries] == sorted(e["seq"] for e in entries)
    assert entries[1]["details"] == {"players": 2}


def test_unknown_keys_missing_reasons_and_bad_tokens_are_refused(
    start_server: Callable[..., Any],
) -> None:
    server = start_server(no_web=True)
    wrong = admin(server.address, "f" * 48, "pause", "--reason", "why not")
    assert wrong.returncode == 1
    assert "PERMISSION_DENIED" in wrong.stderr
    blank = admin(server.address, ORGANISER_KEY, "close-registration", "--reason", "  ")
    assert blank.returncode == 1
    assert "INVALID_ARGUMENT" in blank.stderr and "needs a reason" in blank.stderr
    none = mammamia("admin", "status", "--server", server.address)
    assert none.returncode == 1 and "no operator key" in none.stderr
    with grpc.insecure_channel(server.address) as channel:
        stub = apb_grpc.AdminStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.GetSwitches(apb.GetSwitchesRequest(), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as refused:
            stub.ListAudit(
                apb.ListAuditRequest(page_token="not-ours"),
                timeout=10,
                metadata=(("organiser-key", ORGANISER_KEY),),
            )
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # Nothing refused is on the trail.
    assert log(server.address) == []


def test_matches_created_on_one_call_are_each_audited_as_their_operator(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    path = tmp_path / "operators.toml"
    carol = add(path, "carol")
    server = start_server(operators=path, no_web=True)
    with grpc.insecure_channel(server.address) as channel:
        replies = list(
            pb_grpc.OrganiserStub(channel).CreateMatches(
                iter([pb.CreateMatchRequest(players=2), pb.CreateMatchRequest(players=3)]),
                timeout=30,
                metadata=(("organiser-key", carol),),
            )
        )
    assert [
        (e["operator"], e["action"], e["target"], e["details"]) for e in log(server.address)
    ] == [
        ("carol", "match.create", replies[0].match_id, {"players": 2}),
        ("carol", "match.create", replies[1].match_id, {"players": 3}),
    ]
