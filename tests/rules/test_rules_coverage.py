"""Every rule of RULES.md sections 2 to 7 has at least one scenario naming it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import test_rules_resolve
import test_rules_rounds
import test_rules_setup
import test_rules_turn
from rules_support import RULE_ID

RULES = Path(__file__).resolve().parents[2].parent / "shared" / "RULES.md"
SECTIONS = ("R-SETUP-", "R-TURN-", "R-RES-", "R-NEXT-", "R-END-", "R-VIEW-")
HERE = Path(__file__).parent


def rule_ids() -> set[str]:
    """Returns the rule ids RULES.md defines in sections 2 to 7."""
    text = RULES.read_text(encoding="utf-8")
    defined = set(re.findall(r"^- \*\*(R-[A-Z]+-\d+)", text, flags=re.MULTILINE))
    return {r for r in defined if r.startswith(SECTIONS)}


def named_rules() -> set[str]:
    """Returns the rule ids named by the scenario tables and the test functions here."""
    names = [c.id for c in test_rules_turn.CASES + test_rules_turn.REFUSALS
             + test_rules_resolve.CASES + test_rules_resolve.REFUSALS
             + test_rules_rounds.CASES + test_rules_rounds.REFUSALS]
    names += [s[0] for s in test_rules_setup.SETUPS]
    for path in HERE.glob("test_rules_*.py"):
        names += re.findall(r"def test_(R_[A-Z]+_\d+)", path.read_text(encoding="utf-8"))
        names += re.findall(r'id="(R-[A-Z]+-\d+)', path.read_text(encoding="utf-8"))
    return {m.group() for n in names if (m := RULE_ID.match(n.replace("_", "-")))}




def test_every_rule_of_sections_2_to_7_has_a_scenario() -> None:
    if not RULES.exists():
        pytest.skip(f"{RULES} is absent: the shared rules are not beside the checkout")
    rules = rule_ids()
    assert len(rules) == 37, sorted(rules)
    missing = sorted(rules - named_rules())
    assert not missing, f"rules with no scenario: {missing}"
