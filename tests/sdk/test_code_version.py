"""A Python bot's default ladder version: a hash of the file that defines its class,
which changes when the file does and not with the SPEC's parameters."""

from __future__ import annotations

import hashlib
from pathlib import Path

from client_sdk.loader import code_version, load_bot

BOT = """
from client_sdk import Bot


class Mine(Bot):
    def __init__(self, depth: int = 1) -> None:
        self.depth = depth

    def choose(self, view, decision):
        return decision.options[0]
"""


def test_the_version_is_the_hash_of_the_file_that_defines_the_class(tmp_path: Path) -> None:
    path = tmp_path / "versioned_bot.py"
    path.write_text(BOT)
    first = code_version(load_bot(f"{path}:Mine"))
    assert first == hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    # The SPEC's parameters are not part of it.
    assert code_version(load_bot(f"{path}:Mine@depth=2")) == first

    path.write_text(BOT + "\n# tuned\n")
    second = tmp_path / "versioned_bot_2.py"
    second.write_bytes(path.read_bytes())
    assert code_version(load_bot(f"{second}:Mine")) != first
