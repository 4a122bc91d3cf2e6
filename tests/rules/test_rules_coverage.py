"""Every rule of docs/rules.md is named by the id of at least one test here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from rules_support import RULE_ID

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
RULES = ROOT / "docs" / "rules.md"
SECTIONS = ("R-COMP-", "R-SETUP-", "R-TURN-", "R-RES-", "R-NEXT-", "R-END-", "R-VIEW-")


def rule_ids() -> set[str]:
    """Returns the rule ids docs/rules.md defines: each is a heading of its own."""
    text = RULES.read_text(encoding="utf-8")
    return set(re.findall(r"^#{2,4} (R-[A-Z]+-\d+)\s*$", text, flags=re.MULTILINE))


def collected_ids() -> list[str]:
    """Returns the ids of the tests in this folder, as pytest collects them."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            str(HERE),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    return [line.split("::", 1)[1] for line in done.stdout.splitlines() if "::" in line]


def test_every_rule_has_a_scenario() -> None:
    rules = rule_ids()
    assert len(rules) == 42, f"docs/rules.md changed its rules: {sorted(rules)}"
    assert {r.rsplit("-", 1)[0] + "-" for r in rules} == set(SECTIONS)
    named = {rule for test in collected_ids() for rule in RULE_ID.findall(test.replace("_", "-"))}
    missing = sorted(rules - named)
    assert not missing, f"rules no test id names: {missing}"
