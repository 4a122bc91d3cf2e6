"""The protocol guide's example messages are messages of the current contract.

Every ```protobuf block of docs/protocol.md holds one or more messages in
protobuf text format, separated by blank lines: `SeatEvents` (they begin with
`events`) and `PlayRequest`s (`act` or `observe`). Each must parse against the
generated code of arena.proto, so a renamed or removed field breaks this test
before it misleads a client author.
"""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf import text_format

from mammamia_pb import arena_pb2 as pb

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def example_messages() -> list[str]:
    """Returns the text of every example message in the guide, in order."""
    blocks = re.findall(r"```protobuf\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    chunks = [chunk for block in blocks for chunk in re.split(r"\n\s*\n", block)]
    return [c for c in chunks if any(line.strip() and not line.lstrip().startswith("#")
                                     for line in c.splitlines())]


def test_every_example_parses_as_a_message_of_the_contract() -> None:
    kinds = []
    for text in example_messages():
        first = next(line.strip() for line in text.splitlines()
                     if line.strip() and not line.lstrip().startswith("#"))
        if first.startswith("events"):
            events = text_format.Parse(text, pb.SeatEvents()).events
            assert events
            kinds += [e.WhichOneof("event") for e in events]
        else:
            kinds.append(text_format.Parse(text, pb.PlayRequest()).WhichOneof("message"))
    # A turn and a resolution decision, each answered and its result shown.
    assert kinds.count("decision") == 2
    assert kinds.count("act") == 2
    assert kinds.count("act_result") == 2
    assert {"turn", "resolved"} <= set(kinds)


def test_the_worked_decisions_are_a_turn_and_a_resolution() -> None:
    decisions = []
    for text in example_messages():
        if "decision {" in text:
            message = text_format.Parse(text, pb.SeatEvents())
            decisions += [e.decision for e in message.events if e.HasField("decision")]
    turn, resolution = decisions
    assert turn.kind == pb.DECISION_KIND_TURN and turn.view.phase == pb.PHASE_TURN
    assert resolution.kind == pb.DECISION_KIND_RESOLVE
    assert resolution.view.deciding == "yellow-minimale"
    assert [o.resolve.bake for o in resolution.options] == [True, True, False]
