"""The README's rules-engine example runs as written and writes a record that replays."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mammamia import load

README = Path(__file__).resolve().parents[2] / "README.md"


def example() -> str:
    """Returns the first Python block of the README's "Rules engine" section."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Rules engine\n", 1)
    if len(section) < 2:
        pytest.fail("README.md has no 'Rules engine' section")
    block = re.search(r"```python\n(.*?)```", section[1].split("\n## ", 1)[0], re.DOTALL)
    assert block, "the Rules engine section has no Python example"
    return block.group(1)


def test_readme_example_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", example()], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    state = load(str(tmp_path / "game.json")).replay()
    assert state.is_over
    assert done.stdout.strip() == f"{state.winners()} {state.ranking()}"
