"""The SDK's public surface is pinned, and the SDK keeps to its side of the imports."""

from __future__ import annotations

import ast
from pathlib import Path

import client_sdk

SDK_DIR = Path(client_sdk.__file__).parent


def test_the_public_names_are_pinned_and_sorted() -> None:
    assert client_sdk.__all__ == sorted(client_sdk.__all__, key=lambda n: (not n.isupper(), n))
    assert client_sdk.__all__ == [
        "COLOURS",
        "INGREDIENTS",
        "ORDERS",
        "SUPPLY",
        "WAITER",
        "ArenaResult",
        "Bot",
        "BotSpecError",
        "BotStats",
        "ConnectionLost",
        "Decision",
        "Event",
        "Fault",
        "FaultLog",
        "IllegalActionError",
        "LocalResult",
        "MatchResult",
        "Resolve",
        "SeatInfo",
        "SeatRefused",
        "Turn",
        "View",
        "decide",
        "fallback",
        "fewest_cards_bake",
        "load_bot",
        "play_local",
        "run_arena",
        "run_bot",
        "run_ladder",
        "run_place",
        "wilson_interval",
    ]
    for name in client_sdk.__all__:
        assert getattr(client_sdk, name) is not None


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
    return roots


def test_the_sdk_never_imports_the_server_and_only_wire_touches_protobuf() -> None:
    for path in SDK_DIR.glob("*.py"):
        roots = imported_roots(path)
        assert "server" not in roots, path.name
        source = path.read_text()
        if path.name not in ("wire.py", "connection.py", "watch.py"):
            assert "mammamia_pb" not in roots and "google" not in roots, path.name
        if path.name in ("connection.py", "watch.py"):
            # These use the generated service stubs; messages come from wire.
            assert "arena_pb2 " not in source and "arena_pb2." not in source
