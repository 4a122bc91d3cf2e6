"""The protocol guide's examples and tables agree with the current contract.

Every ```protobuf block of docs/protocol.md holds one or more messages in
protobuf text format, separated by blank lines: `SeatEvents` (they begin with
`events`) and `PlayRequest`s (`act` or `observe`). Each must parse against the
generated code of arena.proto, so a renamed or removed field breaks this test
before it misleads a client author. The examples must also keep the contract's
rules (numbering, the decision's timing fields, canonical option order, refusal
messages), the refusal table must list every Refusal with the status code the
.proto gives it, and the closing list of changes must name fields that exist.
"""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf import text_format

from mammamia_pb import arena_pb2 as pb

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"

# The events of the match log, numbered 1, 2, 3, ...; every other event carries 0.
NUMBERED = {"round_started", "turn", "round_ended", "resolved", "deadline_passed"}
UNNUMBERED = {"decision", "act_result", "match_ended"}

# Refusal -> the gRPC status code arena.proto gives it (Seat.Act, enum Refusal).
REFUSAL_CODES = {
    "REFUSAL_MALFORMED": "INVALID_ARGUMENT",
    "REFUSAL_UNKNOWN_DECISION": "FAILED_PRECONDITION",
    "REFUSAL_OTHER_SEAT": "PERMISSION_DENIED",
    "REFUSAL_ALREADY_ANSWERED": "FAILED_PRECONDITION",
    "REFUSAL_DEFAULTED": "FAILED_PRECONDITION",
    "REFUSAL_NO_SUCH_OPTION": "INVALID_ARGUMENT",
    "REFUSAL_ILLEGAL": "INVALID_ARGUMENT",
}
CODE_NUMBERS = {"INVALID_ARGUMENT": 3, "FAILED_PRECONDITION": 9, "PERMISSION_DENIED": 7}
# The decision stays open after these refusals (and only these).
STILL_OPEN = {"REFUSAL_NO_SUCH_OPTION", "REFUSAL_ILLEGAL"}

KINDS = ["salami", "pineapple", "mushroom", "pepper", "olive"]


def example_messages() -> list[str]:
    """Returns the text of every example message in the guide, in order."""
    blocks = re.findall(r"```protobuf\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    chunks = [chunk for block in blocks for chunk in re.split(r"\n\s*\n", block)]
    return [
        c
        for c in chunks
        if any(line.strip() and not line.lstrip().startswith("#") for line in c.splitlines())
    ]


def event_messages() -> list[pb.SeatEvents]:
    """Returns every example `SeatEvents` of the guide, in order."""
    out = []
    for text in example_messages():
        first = next(
            line.strip()
            for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        )
        if first.startswith("events"):
            out.append(text_format.Parse(text, pb.SeatEvents()))
    return out


def decisions() -> list[pb.DecisionRequest]:
    """Returns every decision request of the examples, those in snapshots included."""
    out = []
    for message in event_messages():
        for e in message.events:
            if e.HasField("decision"):
                out.append(e.decision)
            if e.HasField("snapshot") and e.snapshot.HasField("decision"):
                out.append(e.snapshot.decision)
    return out


def section(title: str) -> str:
    """Returns the text of the guide's `## title` section."""
    text = GUIDE.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_every_example_parses_as_a_message_of_the_contract() -> None:
    kinds: list[str | None] = []
    for text in example_messages():
        first = next(
            line.strip()
            for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        )
        if first.startswith("events"):
            events = text_format.Parse(text, pb.SeatEvents()).events
            assert events
            kinds += [e.WhichOneof("event") for e in events]
        else:
            kinds.append(text_format.Parse(text, pb.PlayRequest()).WhichOneof("message"))
    # A turn and a resolution decision, each answered and its result shown; a
    # resumed stream's snapshot; a refused answer.
    assert kinds.count("decision") == 2
    assert kinds.count("act") == 2
    assert kinds.count("act_result") >= 2
    assert {"turn", "resolved", "snapshot"} <= set(kinds)


def test_the_worked_decisions_are_a_turn_and_a_resolution() -> None:
    worked = [e.decision for m in event_messages() for e in m.events if e.HasField("decision")]
    turn, resolution = worked
    assert turn.kind == pb.DECISION_KIND_TURN and turn.view.phase == pb.PHASE_TURN
    assert resolution.kind == pb.DECISION_KIND_RESOLVE
    assert resolution.view.phase == pb.PHASE_RESOLVE
    assert resolution.view.deciding == "yellow-minimale"
    assert resolution.view.oven[resolution.view.revealed - 1] == resolution.view.deciding
    assert [o.resolve.bake for o in resolution.options] == [True, True, False]
    # During turns nothing is revealed and the table is empty.
    assert turn.view.revealed == 0 and turn.view.table == pb.IngredientCounts()


def test_examples_follow_the_numbering_rule() -> None:
    for message in event_messages():
        numbered = []
        for e in message.events:
            kind = e.WhichOneof("event")
            if kind in NUMBERED:
                assert e.sequence > 0, kind
                numbered.append(e.sequence)
            elif kind in UNNUMBERED:
                assert e.sequence == 0, kind
            else:
                assert kind == "snapshot"
                history = [h.sequence for h in e.snapshot.history]
                assert all(h.WhichOneof("event") in NUMBERED for h in e.snapshot.history)
                if history:
                    assert history == list(range(history[0], e.sequence + 1))
                numbered.append(e.sequence)
        # Numbered events of one message follow one another without a gap.
        if numbered:
            assert numbered == list(range(numbered[0], numbered[0] + len(numbered)))


def test_examples_keep_the_timing_fields_consistent() -> None:
    found = decisions()
    assert len(found) == 3
    for d in found:
        assert d.default_in_ms == d.deadline_ms + d.time_bank_ms
        # default_at is the deadline plus the bank left.
        assert d.default_at.ToMilliseconds() - d.deadline.ToMilliseconds() == d.time_bank_ms


def _turn_key(option: pb.Action) -> tuple[bool, int, int, bool, str, int]:
    t = option.turn
    draw = (
        0
        if not t.HasField("draw")
        else {pb.DRAW_SOURCE_SUPPLY: 1, pb.DRAW_SOURCE_WAITER: 2}[t.draw]
    )
    kind = KINDS.index(t.ingredient) if t.ingredient else 0
    return (getattr(t, "pass"), kind, t.count, t.order != "", t.order, draw)


def test_the_worked_options_are_in_the_canonical_order() -> None:
    turn, resolution = [
        e.decision for m in event_messages() for e in m.events if e.HasField("decision")
    ]
    keys = [_turn_key(o) for o in turn.options]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert not resolution.options[-1].resolve.bake
    assert all(o.resolve.bake for o in resolution.options[:-1])


def test_refused_examples_begin_with_the_refusal_name() -> None:
    refused = [
        e.act_result
        for m in event_messages()
        for e in m.events
        if e.HasField("act_result") and not e.act_result.accepted
    ]
    assert refused
    for r in refused:
        name = pb.Refusal.Name(r.refusal)
        assert r.message.startswith(name + ":")
        assert r.code == CODE_NUMBERS[REFUSAL_CODES[name]]
        assert (r.rule != "") == (name == "REFUSAL_ILLEGAL")


def test_the_refusal_table_lists_every_refusal_in_precedence_order() -> None:
    rows = re.findall(
        r"^\| `(REFUSAL_\w+)` \| `(\w+)` \| ([^|]+) \|",
        section("Answers, idempotency and refusals"),
        re.MULTILINE,
    )
    names = [v.name for v in pb.Refusal.DESCRIPTOR.values if v.number]
    # The precedence of enum Refusal is its numbering.
    assert [name for name, _, _ in rows] == names
    for name, code, still in rows:
        assert code == REFUSAL_CODES[name], name
        assert still.strip().startswith("still open") == (name in STILL_OPEN), name


def test_the_guide_ends_with_the_conformance_kit_and_the_changes() -> None:
    headings = re.findall(r"^## (.+)$", GUIDE.read_text(), re.MULTILINE)
    assert headings[-2:] == [
        "Testing your client: the conformance kit",
        "Changes in this version of mammamia.v1",
    ]
    changes = section("Changes in this version of mammamia.v1")
    named = re.findall(r"`([A-Z]\w+)\.(\w+)`", changes)
    assert named
    for message, field in named:
        assert field in getattr(pb, message).DESCRIPTOR.fields_by_name, (message, field)
