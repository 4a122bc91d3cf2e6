"""The messages of ``mammamia match``: the requests it sends to a server's Organiser
service, and its replies as the JSON-ready data the command prints.

The command's side of the wire, apart from the server's codec (``server.wire``):
it imports only the generated messages, so a command starts without loading the
match machinery.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict

from mammamia_pb import arena_pb2 as pb


def create_request(
    players: int,
    *,
    seed: int | None = None,
    deadline_s: float | None = None,
    time_bank_s: float = 0.0,
    names: Sequence[str] = (),
    places: Sequence[str] = (),
) -> pb.CreateMatchRequest:
    """Returns the CreateMatchRequest for a match of ``players`` (times in seconds; no
    deadline: the server's default; ``places``: the places to seat it on, in seat
    order); raises ValueError for a deadline under 1 ms."""
    msg = pb.CreateMatchRequest(players=players, names=names, places=places)
    if seed is not None:
        msg.seed = seed
    if deadline_s is not None:
        if round(deadline_s * 1000) < 1:
            raise ValueError(f"deadline {deadline_s!r} s: at least 0.001 s")
        msg.time_control.deadline_ms = round(deadline_s * 1000)
    if time_bank_s:
        msg.time_control.time_bank_ms = round(time_bank_s * 1000)
    return msg


def record_request(match_id: str) -> pb.GetRecordRequest:
    """Returns the request for a match's game record (Organiser, Spectate or Ladder)."""
    return pb.GetRecordRequest(match_id=match_id)


def list_request(size: int, token: str = "") -> pb.ListMatchesRequest:
    """Returns the request for a page of ``size`` matches, newest first
    (Organiser.ListMatches): the first, or the one ``token`` names."""
    return pb.ListMatchesRequest(page_size=size, page_token=token)


def created(msg: pb.CreateMatchResponse) -> dict[str, Any]:
    """Returns a created match as ``{"match": ID, "tokens": [...]}`` (seat order)."""
    return {"match": msg.match_id, "tokens": list(msg.seat_tokens)}


def summary_data(msg: pb.MatchSummary) -> dict[str, Any]:
    """Returns a listing entry as JSON-ready data (protobuf's JSON mapping)."""
    data: dict[str, Any] = MessageToDict(msg)
    return data
