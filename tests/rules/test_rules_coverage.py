"""Every rule of RULES.md sections 2 to 7 is named by the id of at least one test here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from rules_support import RULE_ID

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
RULES = ROOT.parent / "shared" / "RULES.md"
SECTIONS = ("R-SETUP-", "R-TURN-", "R-RES-", "R-NEXT-", "R-END-", "R-VIEW-")


def rule_ids() -> set[str]:
    """Returns the rule ids RULES.md defines in sections 2 to 7."""
    text = RULES.read_text(encoding="utf-8")
    defined = set(re.findall(r"^- \*\*(R-[A-Z]+-\d+)", text, flags=re.MULTILINE))
    return {r for r in defined if r.startswith(SECTIONS)}


def collected_ids() -> list[str]:
    """Returns the ids of the tests in this folder, as pytest collects them."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", str(HERE)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    return [line.split("::", 1)[1] for line in done.stdout.splitlines() if "::" in line]


def test_every_rule_of_sections_2_to_7_has_a_scenario() -> None:
    if not RULES.exists():
        pytest.skip(f"{RULES} is absent: the shared rules are not beside the checkout")
    rules = rule_ids()
    assert len(rules) == 37, f"RULES.md sections 2-7 changed: {sorted(rules)}"
    named = {rule for test in collected_ids() for rule in RULE_ID.findall(test.replace("_", "-"))}
    missing = sorted(rules - named)
    assert not missing, f"rules no test id names: {missing}"
