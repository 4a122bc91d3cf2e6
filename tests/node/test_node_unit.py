"""The Node.js bot's own unit tests (recipes, choice), run with node's test runner."""

from __future__ import annotations

import re
import subprocess

from .conftest import PACKAGE


def test_node_unit_tests_pass(node: str) -> None:
    done = subprocess.run(
        [node, "--test", "test/"],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    passed = re.search(r"^# pass (\d+)$", done.stdout, re.MULTILINE)
    assert passed is not None and int(passed.group(1)) > 0, done.stdout
    assert "# fail 0" in done.stdout
