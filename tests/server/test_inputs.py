"""A match's typed inputs (``server.inputs``): the journal's JSON of each is the one
every earlier journal holds, read back as the same input; a journal that names an
input this server does not know leaves its match unresumed, the others resumed."""

from __future__ import annotations

import json
from pathlib import Path

from structlog.testing import capture_logs

from mammamia.actions import Resolve, Turn
from server.db.journal_file import JournalFile
from server.db.matches import Storage
from server.inputs import Abort, Answer, Input, Join, Start, Tick, from_json, to_json

#: Each kind of input beside its JSON as journals have always held it.
WRITTEN: list[tuple[Input, dict[str, object]]] = [
    (
        Join(1, "ada", "c0ffee"),
        {"k": "join", "seat": 1, "name": "ada", "seed": "c0ffee"},
    ),
    (Join(0, None, None), {"k": "join", "seat": 0, "name": None, "seed": None}),
    (Start(12.5), {"k": "start", "at": 12.5}),
    (
        Answer(2, "d-7", Turn.play("salami", 2, None, "supply"), 14.25),
        {
            "k": "answer",
            "seat": 2,
            "decision": "d-7",
            "action": {"seat": 2, "play": {"ingredient": "salami", "count": 2}, "draw": "supply"},
            "at": 14.25,
        },
    ),
    (
        # A note (server.notes) is written only when there is one.
        Answer(0, "d-8", Turn.pass_turn("waiter"), 15.0, note="thin supply"),
        {
            "k": "answer",
            "seat": 0,
            "decision": "d-8",
            "action": {"seat": 0, "pass": True, "draw": "waiter"},
            "at": 15.0,
            "note": "thin supply",
        },
    ),
    (Tick(20.0, (0, 3)), {"k": "tick", "at": 20.0, "absent": [0, 3]}),
    (Abort("organiser"), {"k": "abort", "reason": "organiser"}),
]


def test_each_input_is_written_as_journals_always_held_it_and_read_back() -> None:
    for step, written in WRITTEN:
        assert json.loads(json.dumps(to_json(step))) == json.loads(json.dumps(written)), step
        assert from_json(json.loads(json.dumps(written))) == step


def test_a_resolution_answer_reads_back() -> None:
    step = Answer(0, "d-1", Resolve(True), 3.0)
    assert from_json(json.loads(json.dumps(to_json(step)))) == step


def test_a_match_whose_inputs_do_not_read_is_not_resumed(tmp_path: Path) -> None:
    db = tmp_path / "arena.db"
    file = JournalFile(Path(f"{db}.journal"))
    file.setup("m-good", json.dumps({"players": 2}))
    file.input("m-good", 0, json.dumps({"k": "start", "at": 1.0}))
    file.setup("m-odd", json.dumps({"players": 2}))
    file.input("m-odd", 0, json.dumps({"k": "shuffle", "at": 1.0}))
    file.close()

    storage = Storage(db)
    journal = storage.open_journal()
    with capture_logs() as logs:
        held = journal.unfinished()
    assert [(u.match_id, u.inputs) for u in held] == [("m-good", (Start(1.0),))]
    assert any(e["event"] == "match_not_resumed" and e["match"] == "m-odd" for e in logs)
    journal.close()
    storage.close()
