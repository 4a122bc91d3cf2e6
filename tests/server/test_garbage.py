"""The collector's settings for serving (``server.garbage``), in a process of their
own (they are the process's): start-up's objects frozen, the thresholds set."""

from __future__ import annotations

import json
import subprocess
import sys

from server.garbage import THRESHOLDS

SETTLE = """
import gc, json
from server import app, garbage      # what a server imports before it serves
before = gc.get_freeze_count()
garbage.settle()
print(json.dumps({"before": before, "frozen": gc.get_freeze_count(),
                  "young": gc.get_count()[0], "thresholds": gc.get_threshold()}))
"""


def test_settling_freezes_what_start_up_made_and_sets_the_thresholds() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SETTLE], capture_output=True, text=True, check=True, timeout=60
    )
    seen = json.loads(out.stdout)
    assert seen["before"] == 0
    assert seen["frozen"] > 10_000  # modules, classes, functions of the server
    assert seen["young"] < 100  # collected before the freeze
    assert tuple(seen["thresholds"]) == THRESHOLDS
