"""docs/rules.md and the rule ids the project cites agree, both ways.

Every rule id cited in the code, the protos, the tests, docs/protocol.md or the
README is a heading of docs/rules.md (so it can be linked to), and every rule
docs/rules.md defines is cited by a test under tests/rules. The worked examples at
the end of docs/rules.md are replayed against the engine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from mammamia import INGREDIENTS, MAMMA_MIA, State, Turn, action_from_json, action_to_json

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "docs" / "rules.md"
CITING = (
    "mammamia",
    "server",
    "client_sdk",
    "bots",
    "tests",
    "protos",
    "docs/protocol.md",
    "README.md",
)
SKIPPED_DIRS = {"node_modules", "__pycache__", ".mypy_cache", ".pytest_cache"}
TEXT_SUFFIXES = {
    ".py",
    ".pyi",
    ".proto",
    ".md",
    ".json",
    ".txt",
    ".js",
    ".mjs",
    ".ts",
    ".toml",
    ".cfg",
}
RULE_ID = re.compile(r"\bR-[A-Z]+-\d+\b")
TEST_RULE_ID = re.compile(r"(?<![A-Za-z0-9])R[-_]([A-Z]+)[-_](\d+)")
"""A rule id in a test's text or name, where ``test_R_VIEW_4_...`` names R-VIEW-4."""
HEADING = re.compile(r"^#{2,4} (R-[A-Z]+-\d+)\s*$", re.MULTILINE)


def text_files(paths: Iterable[Path]) -> list[Path]:
    """Returns the text files at or under ``paths`` (none from caches or node_modules)."""
    found: list[Path] = []
    for path in paths:
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += [
                p
                for p in sorted(path.rglob("*"))
                if p.is_file()
                and p.suffix in TEXT_SUFFIXES
                and not SKIPPED_DIRS & set(p.relative_to(path).parts)
            ]
    return found


def cited(paths: Iterable[Path]) -> dict[str, list[Path]]:
    """Returns each rule id cited in the files at or under ``paths``, with where."""
    where: dict[str, list[Path]] = {}
    for path in text_files(paths):
        for rule in set(RULE_ID.findall(path.read_text(encoding="utf-8", errors="replace"))):
            where.setdefault(rule, []).append(path)
    return where


def rules_tested(rule_tests: Path) -> set[str]:
    """Returns the rule ids the test modules of ``rule_tests`` cite, in text or in names."""
    return {
        f"R-{kind}-{n}"
        for path in sorted(rule_tests.glob("test_*.py"))
        for kind, n in TEST_RULE_ID.findall(path.read_text(encoding="utf-8"))
    }


def headings(rules: Path) -> list[str]:
    """Returns the rule ids that are headings of their own in ``rules``."""
    return HEADING.findall(rules.read_text(encoding="utf-8"))


def disagreements(rules: Path, citing: Sequence[Path], rule_tests: Path) -> list[str]:
    """Returns what keeps ``rules`` and the citations from agreeing (empty when they do)."""
    defined = headings(rules)
    problems = [
        f"{r} is a heading twice" for r in sorted({r for r in defined if defined.count(r) > 1})
    ]
    for rule, files in sorted(cited(citing).items()):
        if rule not in defined:
            shown = ", ".join(
                str(f.relative_to(ROOT) if f.is_relative_to(ROOT) else f) for f in files[:3]
            )
            problems.append(f"{rule} is cited ({shown}) but is no heading of {rules.name}")
    named = rules_tested(rule_tests)
    problems += [
        f"{rule} is cited by no test in {rule_tests.name}/" for rule in defined if rule not in named
    ]
    return problems


def test_docs_rules_and_the_citations_agree() -> None:
    assert len(headings(RULES)) == 42
    assert disagreements(RULES, [ROOT / p for p in CITING], ROOT / "tests" / "rules") == []


def test_a_disagreement_is_found_either_way(tmp_path: Path) -> None:
    # The ids are put together here so that this file cites none that does not exist.
    known, unknown = "R-" + "TURN-4", "R-" + "NOWHERE-9"
    rules = tmp_path / "rules.md"
    rules.write_text(
        f"# Rules\n\n### {known}\n\nText.\n\n### {unknown}\n\nMore text.\n", encoding="utf-8"
    )
    code = tmp_path / "code.py"
    code.write_text(f'raise ValueError("refused ({known})")\n', encoding="utf-8")
    rule_tests = tmp_path / "rules"
    rule_tests.mkdir()
    (rule_tests / "test_turn.py").write_text(f'CASE = "{known}-draws"\n', encoding="utf-8")
    assert disagreements(rules, [code], rule_tests) == [f"{unknown} is cited by no test in rules/"]
    other = "R-" + "TURN-99"
    code.write_text(f"# ({known}, {other})\n", encoding="utf-8")
    (rule_tests / "test_turn.py").write_text(
        f'CASES = ["{known}", "{unknown}"]\n', encoding="utf-8"
    )
    assert disagreements(rules, [code], rule_tests) == [
        f"{other} is cited ({code}) but is no heading of rules.md"
    ]
    rules.write_text(f"### {known}\n\n### {known}\n\n### {unknown}\n", encoding="utf-8")
    assert disagreements(rules, [], rule_tests) == [f"{known} is a heading twice"]


def test_every_heading_of_docs_rules_is_linkable() -> None:
    # A link such as docs/rules.md#r-turn-4 needs the heading to be the id alone.
    text = RULES.read_text(encoding="utf-8")
    links = set(re.findall(r"\(#(r-[a-z]+-\d+)\)", text))
    assert links <= {r.lower() for r in headings(RULES)}


# -- the worked examples of docs/rules.md -------------------------------------------


def counts(text: str) -> list[int]:
    """Returns ingredient counts in canonical order from e.g. ``"2 salami, olive"``."""
    out = [0] * 5
    for part in filter(None, (p.strip() for p in text.split(","))):
        n, _, kind = part.partition(" ")
        out[INGREDIENTS.index(kind or n)] += int(n) if kind else 1
    return out


def revealed(colours: Sequence[str], oven: str, order: str, hand: str) -> State:
    """Returns a two-player game whose round 1 ends now and whose oven is ``oven``
    (ingredients, first put in first) and then ``order``; the order's owner, seat 0,
    holds ``hand``. Seat 1 ends the round by drawing the last card (the Mamma Mia!
    card) after playing one olive, which comes up after the order."""
    state = State.new(players=2, colours=colours, first_player=1, seed=0)
    state.oven = [INGREDIENTS[k] for k, n in enumerate(counts(oven)) for _ in range(n)] + [order]
    state.hand_ings = [counts(hand), counts("olive")]
    state.supply = [MAMMA_MIA]
    state.apply(Turn("olive", 1, None, "supply"))
    return state


BAKED, FAILED = "baked without a question", "failed without a question"
EXAMPLES = [
    # Pizza Bombastica.
    ("red-bombastica", "6 salami, 7 olive, 3 pepper", "", BAKED),
    (
        "red-bombastica",
        "6 salami, 6 olive",
        "2 salami, pepper, olive",
        [
            {"bake": True, "hand": {"salami": 2, "pepper": 1}},
            {"bake": True, "hand": {"salami": 2, "olive": 1}},
            {"bake": True, "hand": {"salami": 1, "pepper": 1, "olive": 1}},
        ],
    ),
    ("red-bombastica", "6 salami, 6 olive", "2 salami", FAILED),
    # Pizza Minimale (green: pepper).
    (
        "green-minimale",
        "2 pepper, 2 salami, 2 mushroom, 3 pineapple",
        "salami, mushroom",
        [
            {"bake": True, "ingredient": "salami", "hand": {"salami": 1}},
            {"bake": True, "ingredient": "mushroom", "hand": {"mushroom": 1}},
        ],
    ),
    ("green-minimale", "pepper, 3 salami, 5 mushroom", "", BAKED),
    (
        "green-minimale",
        "pepper, 2 salami, 5 mushroom",
        "salami",
        [{"bake": True, "hand": {"salami": 1}}],
    ),
    ("green-minimale", "pepper, salami, 5 mushroom", "", FAILED),
    ("green-minimale", "4 pepper", "3 olive", FAILED),
    # Pizza Monotoni (red: salami).
    (
        "red-monotoni",
        "salami, 6 olive, 4 mushroom",
        "2 mushroom",
        [
            {"bake": True, "ingredient": "mushroom", "hand": {"mushroom": 2}},
            {"bake": True, "ingredient": "olive"},
        ],
    ),
    (
        "red-monotoni",
        "7 olive",
        "salami",
        [{"bake": True, "ingredient": "olive", "hand": {"salami": 1}}],
    ),
    ("red-monotoni", "5 olive, 6 salami", "", FAILED),
    # The mixed order.
    ("red-mixed", "salami, pineapple, mushroom, 2 pepper, olive", "", BAKED),
    (
        "red-mixed",
        "2 salami, pineapple, pepper",
        "mushroom, olive",
        [{"bake": True, "hand": {"mushroom": 1, "olive": 1}}],
    ),
    ("red-mixed", "2 salami, pineapple, pepper", "mushroom", FAILED),
]


@pytest.mark.parametrize(
    ("order", "table", "hand", "outcome"),
    EXAMPLES,
    ids=[f"{e[0]}-{e[1]}-hand-{e[2] or 'none'}" for e in EXAMPLES],
)
def test_worked_example(
    order: str, table: str, hand: str, outcome: str | list[dict[str, object]]
) -> None:
    colour = order.split("-")[0]
    state = revealed([colour, "yellow" if colour != "yellow" else "red"], table, order, hand)
    if isinstance(outcome, list):
        assert state.deciding == order and state.to_act == 0
        asked = [action_to_json(0, a)["resolve"] for a in state.legal_actions()]
        assert asked == [*outcome, {"bake": False}]
        for choice in outcome:
            baked = revealed([colour, "yellow"], table, order, hand)
            baked.apply(action_from_json({"seat": 0, "resolve": choice})[1])
            assert baked.delivered[0] == [order]
        return
    assert state.round == 2, "the resolution asked someone"
    assert state.delivered[0] == ([order] if outcome == BAKED else [])
    if outcome == FAILED:
        assert state.waiters[0][-1] == order
