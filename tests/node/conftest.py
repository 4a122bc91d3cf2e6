"""Fixtures for the Node.js bot's tests: where its package is, and a `node` to run it.

The tests skip (with the reason) only when no `node` is installed; a `node`
without the bot's packages is an error that says how to install them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bots" / "node"


@pytest.fixture(scope="session")
def node() -> str:
    """Returns the path of the `node` executable; skips the test when there is none."""
    path = shutil.which("node")
    if path is None:
        pytest.skip("node is not installed: the Node.js bot cannot run here")
    return path


@pytest.fixture(scope="session")
def node_bot(node: str) -> list[str]:
    """Returns the command that runs the Node.js bot (the package's `main` file).

    Raises a test error naming the fix when the bot's packages are not installed.
    """
    main = json.loads((PACKAGE / "package.json").read_text())["main"]
    if not (PACKAGE / "node_modules" / "@grpc" / "grpc-js").is_dir():
        pytest.fail(
            f"{PACKAGE / 'node_modules'} is missing: run `make test` "
            "or `npm ci --prefix bots/node` first"
        )
    return [node, str(PACKAGE / main)]
