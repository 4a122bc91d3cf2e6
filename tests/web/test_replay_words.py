"""The web page's replays and the text log (``mammamia show``, ``mammamia watch``) are
told by one narrator: every line of a record's log is a step of its replay, word for
word, and the replay adds only the cards turned up one by one and the decisions asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from mammamia.record import loads
from mammamia.show import show
from server.web.replay import replay

RECORDS = sorted(
    path
    for path in (Path(__file__).resolve().parents[1] / "rules" / "records").glob("*.json")
    if not path.name.startswith("bad-") and not path.name.endswith(".expect.json")
)


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.stem)
def test_the_replay_says_what_the_log_says(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    record = loads(text)
    logged = list(show(record))
    steps = [step["text"] for step in replay(text)["steps"]]
    # The log's events, without its headings' and resolutions' marks; the header and
    # the final ranking are the log's own (the page shows the seats and the scores).
    events = [line.removeprefix("== ").strip() for line in logged[1:] if line[:1] != "#"]
    events = [line for line in events if not line.startswith(("Winner", "(the record stops"))]
    told = [s for s in steps if "turns up onto the table" not in s and "its owner decides" not in s]
    assert [s.split(": seat")[0] if s.startswith("Game over") else s for s in told] == events
