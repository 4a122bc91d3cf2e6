"""The packages import one way (DESIGN.md, "The house"), and the rules' API is pinned.

    mammamia     the standard library only
    server       never client_sdk or bots
    client_sdk   never server (nor bots)
    bots         client_sdk, mammamia and the standard library only

Imports are read with ``ast`` (inside functions too), so nothing is executed. A
package that does not exist yet has nothing to check.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import mammamia

ROOT = Path(__file__).resolve().parents[1]
PROJECT = {"mammamia", "mammamia_pb", "server", "client_sdk", "bots"}


def imports_of(package: str) -> dict[str, set[str]]:
    """Returns the top-level modules each file of ``package`` imports (relative
    imports count as the package itself)."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    names.add(package)
                elif node.module:
                    names.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = names - {"__future__"}
    return found


def is_stdlib(name: str) -> bool:
    return name in sys.stdlib_module_names


def offences(package: str, allowed: set[str], stdlib: bool) -> list[str]:
    """Returns 'file: module' for each import of ``package`` outside what it may use."""
    return [f"{path}: {name}"
            for path, names in imports_of(package).items()
            for name in sorted(names)
            if name not in allowed | {package} and not (stdlib and is_stdlib(name))]


def test_mammamia_imports_only_the_standard_library() -> None:
    assert imports_of("mammamia"), "the rules package has no modules"
    assert offences("mammamia", set(), stdlib=True) == []


def test_server_never_imports_the_sdk_or_the_bots() -> None:
    bad = [f"{path}: {name}" for path, names in imports_of("server").items()
           for name in sorted(names & {"client_sdk", "bots"})]
    assert bad == []


def test_client_sdk_never_imports_the_server() -> None:
    bad = [f"{path}: {name}" for path, names in imports_of("client_sdk").items()
           for name in sorted(names & {"server", "bots"})]
    assert bad == []


def test_bots_import_only_the_sdk_the_rules_and_the_standard_library() -> None:
    assert offences("bots", {"client_sdk", "mammamia"}, stdlib=True) == []


def test_the_checks_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same reader on a package that breaks every edge.
    bad = tmp_path / "bots"
    bad.mkdir()
    (bad / "leaky.py").write_text("import json\nfrom . import x\n"
                                  "def f():\n    from server.match import Match\n"
                                  "    import grpc\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert offences("bots", {"client_sdk", "mammamia"}, stdlib=True) == [
        "bots/leaky.py: grpc", "bots/leaky.py: server"]


def test_mammamia_public_names_are_pinned() -> None:
    # Sorted as ruff (RUF022) sorts it: constants, then classes, then functions.
    assert mammamia.__all__ == sorted(mammamia.__all__, key=lambda n: (not n.isupper(), n))
    assert mammamia.__all__ == [
        "COLOURS", "INGREDIENTS", "MAMMA_MIA", "ORDERS", "OVER", "RESOLVE", "SUPPLY", "TURN",
        "WAITER",
        "Action", "Event", "IllegalActionError", "MammaMiaError", "Order", "Record",
        "RecordError", "Resolve", "SeatInfo", "State", "Turn", "View",
        "action_from_json", "action_to_json", "load", "loads", "new_game", "parse",
        "public_events", "record_of", "view_of",
    ]
    assert all(hasattr(mammamia, name) for name in mammamia.__all__)
