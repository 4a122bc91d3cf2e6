"""Every relative link of README.md and docs/*.md resolves: the file exists, and a
``#anchor`` names a heading of the page it points to (as GitHub makes anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
EXTERNAL = ("http://", "https://", "mailto:")


def prose(text: str) -> str:
    """Returns ``text`` without its fenced code blocks and inline code spans."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def links(page: Path) -> list[str]:
    """Returns the targets of the Markdown links and images of ``page``, in order."""
    return LINK.findall(prose(page.read_text(encoding="utf-8")))


def slug(heading: str) -> str:
    """Returns the anchor GitHub gives a heading: lower case, punctuation other than
    hyphens and underscores dropped, spaces made hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = "".join(c for c in text.lower() if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Returns the anchors of ``page``'s headings (a repeated one also with -1, -2, ...)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    for heading in HEADING.findall(text):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def shown(path: Path) -> str:
    """Returns ``path`` relative to the repository when it is inside it."""
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def broken(page: Path) -> list[str]:
    """Returns each relative link of ``page`` that does not resolve, with why."""
    faults = []
    for target in links(page):
        if target.startswith(EXTERNAL):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            faults.append(f"{target}: no file {shown(linked)}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            faults.append(f"{target}: no heading #{anchor} in {shown(linked)}")
    return faults


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken(page) == []


def test_the_checker_sees_a_broken_link_and_a_broken_anchor(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# There\n\n## The scheme (`mammamia-seed/1`)\n")
    page.write_text(
        "[ok](there.md#the-scheme-mammamia-seed1) [gone](RULES.md) [bad](there.md#nowhere)\n"
        "`[code](ignored.md)` [web](https://example.org/x.md) [self](#top)\n\n# Top\n"
        "```\n[in a block](ignored.md)\n```\n"
    )
    assert [fault.split(":")[0] for fault in broken(page)] == ["RULES.md", "there.md#nowhere"]
