"""``mammamia ladder export``: every ladder result as CSV, every game record as JSON
lines, from a live server or straight from its database.

From a server, the results are read a page at a time with Ladder.Results and each
record with Ladder.GetRecord (ladder records are public once their match ended),
or with Organiser.GetRecord given the organiser key, whose calls the server does
not rate-limit (the public calls are: an export without the key waits as asked);
from a database (an SQLite file, opened read-only, or a ``postgresql://`` URL, read
in read-only transactions) with the same reads the server makes
(``server.db.ladder.results``). Either way the matches come newest first, in pages
that each item is in exactly once, however many matches end meanwhile
(``server.paging``); the two sources write the same files for the same database.

``OUT`` is a directory made by the export, holding:

- ``results.csv``: one row per seat of each ended match (RESULT_COLUMNS);
- ``records.jsonl``: one game record per line (docs/record.md), for each match with
  a stored record, in the same order.

Both are written in a hidden directory beside ``OUT``, renamed to ``OUT`` once
complete: an export that is interrupted leaves nothing under the final name.
"""

from __future__ import annotations

import csv
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

RESULT_COLUMNS: Final = (
    "match_id",
    "finish_order",
    "status",
    "voided",
    "void_reason",
    "rated",
    "players",
    "created",
    "ended",
    "set_id",
    "set_index",
    "commitment",
    "seat",
    "name",
    "rank",
    "delivered",
    "position",
)
"""The columns of ``results.csv``, in order (docs/operating.md, "Exporting")."""

RESULTS_FILE: Final = "results.csv"
RECORDS_FILE: Final = "records.jsonl"
PAGE_SIZE: Final = 500
"""Matches read per page."""

# A page from a source: the matches (``cli_wire.result_data``'s shape), the function
# that returns the record of one of them by id (None: it has none), and the next
# page's token ("" at the end).
Page = tuple[list[dict[str, Any]], Callable[[str], str | None], str]
Source = Callable[[str], Page]


class ExportError(Exception):
    """An export that cannot start or cannot finish (the message says why)."""


@dataclass
class Counts:
    """What an export has written so far."""

    matches: int = 0
    seats: int = 0
    records: int = 0
    without_record: list[str] = field(default_factory=list)

    def line(self) -> str:
        """Returns the counts as a progress line says them."""
        return f"{self.matches} matches ({self.seats} seats), {self.records} records" + (
            f", {len(self.without_record)} matches without a record" if self.without_record else ""
        )


def iso(nanoseconds: int | None) -> str:
    """Returns a time in nanoseconds since the epoch as ISO 8601 in UTC, to the
    microsecond ("" for None)."""
    if nanoseconds is None:
        return ""
    seconds, rest = divmod(nanoseconds, 10**9)
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return (moment + datetime.timedelta(microseconds=rest // 1000)).isoformat(
        timespec="microseconds"
    )


def nanoseconds(seconds: float) -> int:
    """Returns UNIX seconds as whole nanoseconds, as the server sends a time."""
    return int(seconds * 1e9)


def seat_rows(match: dict[str, Any]) -> Iterator[list[Any]]:
    """Yields the CSV rows (RESULT_COLUMNS) of one match, one per seat."""

    def cell(value: Any) -> Any:
        return "" if value is None else value

    for s in match["seats"]:
        yield [
            match["match_id"],
            cell(match["finish_order"]),
            match["status"],
            int(match["void_reason"] is not None),
            cell(match["void_reason"]),
            int(match["rated"]),
            match["players"],
            iso(match["created_ns"]),
            iso(match["ended_ns"]),
            cell(match["set_id"]),
            cell(match["set_index"]),
            match["commitment"],
            s["seat"],
            s["name"],
            cell(s["rank"]),
            cell(s["delivered"]),
            cell(s["position"]),
        ]


def write(source: Source, out: Path, progress: TextIO | None = None, every: int = 100) -> Counts:
    """Writes every match ``source`` pages through to the directory ``out`` (which
    must not exist) and returns the counts; a progress line goes to ``progress``
    after each ``every`` matches, and a last one with the counts.

    Raises ExportError when ``out`` exists, and whatever the source raises; then
    nothing is left under ``out``.
    """
    out = Path(out)
    if out.exists():
        raise ExportError(f"{out} exists: name a new directory")
    parent = out.resolve().parent
    if not parent.is_dir():
        raise ExportError(f"{parent} is not a directory")
    partial = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=parent))
    counts = Counts()
    try:
        with (
            open(partial / RESULTS_FILE, "w", newline="", encoding="utf-8") as results,
            open(partial / RECORDS_FILE, "w", encoding="utf-8") as records,
        ):
            writer = csv.writer(results)
            writer.writerow(RESULT_COLUMNS)
            token = ""
            while True:
                matches, record_of, next_token = source(token)
                for match in matches:
                    rows = list(seat_rows(match))
                    writer.writerows(rows)
                    counts.seats += len(rows)
                    text = record_of(match["match_id"])
                    if text is None:
                        counts.without_record.append(match["match_id"])
                    else:
                        # One line per record, whatever the stored text's layout.
                        records.write(json.dumps(json.loads(text), separators=(",", ":")))
                        records.write("\n")
                        counts.records += 1
                    counts.matches += 1
                    if progress is not None and counts.matches % every == 0:
                        print(f"mammamia ladder export: {counts.line()}", file=progress)
                if not next_token:
                    break
                if next_token == token:
                    raise ExportError("the server gave the same page token twice")
                token = next_token
            for f in (results, records):
                f.flush()
                os.fsync(f.fileno())
        os.rename(partial, out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if progress is not None:
        print(
            f"mammamia ladder export: wrote {counts.line()} to {out}/{RESULTS_FILE} "
            f"and {out}/{RECORDS_FILE}",
            file=progress,
        )
    return counts


def database_source(db: str, page_size: int = PAGE_SIZE) -> tuple[Source, Callable[[], None]]:
    """Returns (the source that reads the database ``db`` read-only, the function
    that closes it).

    Raises ExportError when the database cannot be opened.
    """
    from ..db.connection import ERRORS, is_url
    from ..db.ladder.results import open_read_only

    if not is_url(db) and not Path(db).is_file():
        raise ExportError(f"{db}: no such database file")
    try:
        reads = open_read_only(db)
    except ERRORS as e:
        raise ExportError(f"{db}: {e}") from e

    def read(token: str) -> Page:
        page = reads.page(page_size, token)
        texts = reads.records([r.match_id for r in page.items])
        return [_row_data(r) for r in page.items], texts.get, page.next_token

    return read, reads.close


def _row_data(r: Any) -> dict[str, Any]:
    """Returns a stored result (``server.db.ladder.results.ResultRow``) in
    ``cli_wire.result_data``'s shape."""
    return {
        "match_id": r.match_id,
        "status": str(r.status),
        "players": r.players,
        "created_ns": nanoseconds(r.created),
        "ended_ns": None if r.ended is None else nanoseconds(r.ended),
        "finish_order": r.finish_order,
        "rated": r.rated,
        "commitment": r.commitment,
        "set_id": r.set_id,
        "set_index": None if r.set_id is None else r.set_index,
        "void_reason": r.void_reason,
        "seats": [
            {
                "seat": s.seat,
                "name": s.name,
                "rank": s.rank,
                "delivered": s.delivered,
                "position": s.position,
            }
            for s in r.seats
        ],
    }


def server_source(
    channel: Any, organiser_key: str = "", page_size: int = PAGE_SIZE, timeout: float = 60.0
) -> Source:
    """Returns the source that reads a server over ``channel``: Ladder.Results a page
    at a time, then each match's record, with Organiser.GetRecord when
    ``organiser_key`` is given (an organiser's calls are not rate-limited), else with
    Ladder.GetRecord, waiting as the server asks when the public rate is reached. A
    match whose record is not stored has none.

    The source raises grpc.RpcError for any other refusal.
    """
    import grpc

    from mammamia_pb import arena_pb2_grpc as pb_grpc

    from . import cli_wire

    ladder = pb_grpc.LadderStub(channel)
    organiser = pb_grpc.OrganiserStub(channel)
    metadata = (("organiser-key", organiser_key),)
    missing = (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION)

    def record(match_id: str) -> str | None:
        request = cli_wire.record_request(match_id)
        try:
            if organiser_key:
                reply = _patient(
                    lambda: organiser.GetRecord(request, metadata=metadata, timeout=timeout)
                )
            else:
                reply = _patient(lambda: ladder.GetRecord(request, timeout=timeout))
        except grpc.RpcError as e:
            if isinstance(e, grpc.Call) and e.code() in missing:
                return None
            raise
        return str(reply.json)

    def read(token: str) -> Page:
        request = cli_wire.results_request(page_size, token)
        reply = _patient(lambda: ladder.Results(request, timeout=timeout))
        # Each record is read as its match is written, so progress shows at once.
        return [cli_wire.result_data(m) for m in reply.matches], record, reply.next_page_token

    return read


PATIENCE: Final = 120
"""How many times a call refused for the public rate is tried again."""


def _patient(call: Callable[[], Any]) -> Any:
    """Returns ``call()``, called again after the wait the server asks for (its
    ``retry-after-ms`` metadata, else a second) while it is refused with
    RESOURCE_EXHAUSTED for the public rate, at most PATIENCE times."""
    import grpc

    for _ in range(PATIENCE):
        try:
            return call()
        except grpc.RpcError as e:
            if not isinstance(e, grpc.Call) or e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise
            trailers = dict(e.trailing_metadata() or ())
            wait_ms = trailers.get("retry-after-ms")
            time.sleep(int(wait_ms) / 1000 if str(wait_ms).isdigit() else 1.0)
    return call()


def main(
    server: str | None,
    db: str | None,
    out: str,
    every: int,
    page_size: int,
    organiser_key: str = "",
) -> int:
    """Runs ``mammamia ladder export``; returns its exit code (0 written, 1 a failure
    of the server or database, 2 a bad OUT)."""
    import grpc

    from ..db.connection import ERRORS

    progress = sys.stderr
    try:
        if db is not None:
            source, close = database_source(db, page_size)
            try:
                write(source, Path(out), progress, every)
            finally:
                close()
            return 0
        assert server is not None
        with grpc.insecure_channel(server) as channel:
            source = server_source(channel, organiser_key, page_size)
            write(source, Path(out), progress, every)
        return 0
    except ExportError as e:
        print(f"mammamia ladder export: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mammamia ladder export: interrupted; nothing written to {out}", file=sys.stderr)
        return 130
    except grpc.RpcError as e:
        code = e.code().name if isinstance(e, grpc.Call) else "ERROR"
        details = e.details() if isinstance(e, grpc.Call) else str(e)
        print(f"mammamia ladder export: {server}: {code}: {details}", file=sys.stderr)
        return 1
    except ERRORS as e:
        print(f"mammamia ladder export: {db}: {e}", file=sys.stderr)
        return 1
