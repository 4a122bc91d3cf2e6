"""A large value in a field of any Rules method gets the method's documented status
with a short message (server/quoting.py), as the arena's services do
(tests/server/test_large_inputs.py). The methods come from rules.proto's
descriptors: a method added without a case fails ``test_every_method_has_a_case``."""

from __future__ import annotations

import re
from collections.abc import Callable

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import rules_pb2 as rpb
from server.quoting import MESSAGE_LIMIT, QUOTE_LIMIT

from .conftest import RulesService

Code = grpc.StatusCode
BIG = "z" * 500_000
UNKNOWN = 2**62  # a handle never given out


def _turn(ingredient: str, order: str = "") -> pb.Action:
    return pb.Action(turn=pb.TurnAction(ingredient=ingredient, count=1, order=order))


Case = tuple[str, Code, Callable[[RulesService, int], object]]

CASES: dict[str, list[Case]] = {
    "NewGame": [
        (
            "colours (100,000)",
            Code.INVALID_ARGUMENT,
            lambda r, h: r.stub.NewGame(rpb.NewGameRequest(players=2, colours=["c"] * 100_000)),
        ),
        (
            "colours (each large)",
            Code.INVALID_ARGUMENT,
            lambda r, h: r.stub.NewGame(
                rpb.NewGameRequest(players=2, colours=[BIG[:200_000], "y" * 200_000])
            ),
        ),
    ],
    "FromRecord": [
        (
            "record_json",
            Code.INVALID_ARGUMENT,
            lambda r, h: r.stub.FromRecord(rpb.FromRecordRequest(record_json=BIG)),
        ),
    ],
    "Determinize": [
        (
            "record.record_json",
            Code.INVALID_ARGUMENT,
            lambda r, h: r.stub.Determinize(
                rpb.DeterminizeRequest(record=rpb.RecordKnowledge(record_json=BIG))
            ),
        ),
    ],
    "Legal": [
        ("handle", Code.NOT_FOUND, lambda r, h: r.stub.Legal(rpb.LegalRequest(handle=UNKNOWN))),
    ],
    "Apply": [
        (
            "action.turn.ingredient",
            Code.INVALID_ARGUMENT,
            lambda r, h: r.stub.Apply(rpb.ApplyRequest(handle=h, action=_turn(BIG))),
        ),
        (
            "action.turn.order",
            Code.INVALID_ARGUMENT,
            lambda r, h: r.stub.Apply(rpb.ApplyRequest(handle=h, action=_turn("salami", BIG))),
        ),
    ],
    "Clone": [
        ("handle", Code.NOT_FOUND, lambda r, h: r.stub.Clone(rpb.CloneRequest(handle=UNKNOWN))),
    ],
    "GetView": [
        ("handle", Code.NOT_FOUND, lambda r, h: r.stub.GetView(rpb.GetViewRequest(handle=UNKNOWN))),
    ],
    "Playout": [
        (
            "policies",
            Code.INVALID_ARGUMENT,
            lambda r, h: r.stub.Playout(rpb.PlayoutRequest(handle=h, policies=[BIG])),
        ),
        (
            "first_action.turn.ingredient",
            Code.INVALID_ARGUMENT,
            lambda r, h: r.stub.Playout(rpb.PlayoutRequest(handle=h, first_action=_turn(BIG))),
        ),
    ],
    # Release refuses nothing: a handle not held is counted as not released.
    "Release": [
        ("handles", Code.OK, lambda r, h: r.stub.Release(rpb.ReleaseRequest(handles=[UNKNOWN]))),
    ],
}


def test_every_method_has_a_case() -> None:
    service = rpb.DESCRIPTOR.services_by_name["Rules"]
    assert {method.name for method in service.methods} == set(CASES)


@pytest.mark.parametrize(
    ("method", "field"), [(m, case[0]) for m, cases in CASES.items() for case in cases]
)
def test_a_large_value_gets_its_code_and_a_short_message(
    rules: RulesService, method: str, field: str
) -> None:
    (code, call) = next((c, f) for name, c, f in CASES[method] if name == field)
    handle = rules.stub.NewGame(rpb.NewGameRequest(players=2, seed=1)).state.handle
    try:
        call(rules, handle)
    except grpc.RpcError as e:
        got, details = e.code(), e.details() or ""
    else:
        got, details = Code.OK, ""
    finally:
        rules.stub.Release(rpb.ReleaseRequest(handles=[handle]))
    assert got is code, details[:200]
    assert len(details) <= MESSAGE_LIMIT
    assert not re.search(rf"(.)\1{{{QUOTE_LIMIT}}}", details), details[:200]
