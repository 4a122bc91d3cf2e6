"""A competition's results as a bundle anyone can verify offline, and its verifier.

A bundle is a **directory** (archive it as you like; the verifier reads the
directory):

    manifest.json          what the competition was and how its finals ended
    records/MATCH.json     every finals match's record, as the server stored it

``manifest.json`` holds the format (``mammamia-bundle/1``), the competition's name
and its file's text, every phase stamp (phase, time, who, reason), the finals'
field and rule (top M, confidence, budget, table sizes), every finals match in the order played
(its id, round, names, status, ranks, absent finalists, commitment and duplicate
set, and its record's file), the final table with why the finals stopped, and the
SHA-256 of every other file of the bundle (``files``). docs/competitions.md shows
one.

:func:`write` makes a bundle from plain data (:class:`Bundle`), which the
competition fills from its storage. :func:`verify` checks a bundle from the bundle
alone and returns the first thing that does not match, as one line:

1. every file's hash, and no file the manifest does not list;
2. every record: its deal against its commitment and revealed seeds
   (``mammamia.fairness.verify``), its replay, and the ranks it states against
   that replay; its id, names, commitment, set and ranks against the manifest's;
3. the final table, recomputed from the records' results alone with
   ``finals.final_table`` (ratings afresh, in the order played), compared exactly,
   and why the finals stopped, recomputed with ``finals.stop`` after every round.

``mammamia verify BUNDLE`` runs :func:`verify` (found through the
``mammamia.verifiers`` entry point, as the rules package imports nothing of the
server).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from mammamia.errors import RecordError
from mammamia.fairness import verify as verify_deal
from mammamia.record import loads, result_faults

from .finals import FinalTable, Played, Stop, final_table, round_matches, stop

FORMAT: Final = "mammamia-bundle/1"
MANIFEST: Final = "manifest.json"
RECORDS: Final = "records"

#: A match id, as it becomes a file name (the server's ids are ``m-`` and hex).
_MATCH_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


@dataclass(frozen=True, slots=True)
class Stamp:
    """One phase change: the phase entered, when (ISO 8601 or UNIX time, as stored),
    who changed it (an organiser, or ``schedule``), and why."""

    phase: str
    at: str | float
    who: str
    reason: str


@dataclass(frozen=True, slots=True)
class Rule:
    """How the finals are played and stop: tables of the sizes ``tables``; the top
    ``top`` ordered with ``confidence``, or no round past ``budget`` matches
    (``finals.stop``)."""

    top: int
    confidence: float
    budget: int
    tables: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Match:
    """One finals match: its id, round (from 0), seats' names, status (``finished``
    or ``aborted``), ranks (per seat, 1 best; empty when aborted), the finalists
    absent when it formed, its commitment, its duplicate set (id and index, the
    set's size is the match's players), and its stored record (JSON text, complete:
    a set's record once its set has ended; None for an aborted match whose host
    went away before any record was stored)."""

    match: str
    round: int
    names: tuple[str, ...]
    status: str
    ranks: tuple[int, ...]
    absent: tuple[str, ...]
    commitment: str
    set_id: str | None
    set_index: int | None
    record: str | None


@dataclass(frozen=True, slots=True)
class Bundle:
    """What a bundle holds: the competition's name and file text, its phase stamps,
    the finals' field (in the ladder's order), its rule, its matches in the order
    played, and why it stopped (None: it had not stopped, or the competition closed
    first). The final table is computed from the matches (``finals.final_table``)."""

    name: str
    competition: str
    stamps: tuple[Stamp, ...]
    field: tuple[str, ...]
    rule: Rule
    matches: tuple[Match, ...]
    stopped: str | None


def table_json(table: FinalTable, stopped: Stop | str | None) -> dict[str, Any]:
    """Returns the final table as the manifest holds it: its lines, its matches, and
    why the finals stopped (``{"reason", "matches"}``, or None)."""
    reason: dict[str, Any] | None
    if isinstance(stopped, Stop):
        reason = {"reason": stopped.reason, "matches": stopped.matches}
    elif stopped is not None:
        reason = {"reason": stopped, "matches": table.matches}
    else:
        reason = None
    return {"matches": table.matches, "stop": reason, "lines": [asdict(x) for x in table.lines]}


def computed_table(field: Sequence[str], matches: Sequence[Match]) -> FinalTable:
    """Returns the final table of ``matches`` (the finished ones; the aborted ones
    count for its balance only). Raises ValueError as ``finals.final_table``."""
    cut = [m.names for m in matches if m.status == "aborted"]
    return final_table(field, results(matches), cut)


def results(matches: Sequence[Match]) -> list[Played]:
    """Returns the finished matches' results, in the order given, as the final table
    takes them."""
    return [
        Played(m.names, m.ranks, tuple(m.absent), m.set_id or "")
        for m in matches
        if m.status == "finished"
    ]


def write(path: str | Path, bundle: Bundle) -> Path:
    """Writes ``bundle`` as a directory at ``path`` (which must not exist, or be
    empty) and returns the manifest's path.

    Raises ValueError for a match id that cannot be a file name, a match listed
    twice, or a record that is not one; FileExistsError for a directory in use.
    """
    root = Path(path)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise FileExistsError(f"{root}: exists and is not an empty directory")
    seen: set[str] = set()
    for m in bundle.matches:
        if not _MATCH_ID.fullmatch(m.match):
            raise ValueError(f"match id {m.match!r} cannot name a record's file")
        if m.match in seen:
            raise ValueError(f"match {m.match} is listed twice")
        seen.add(m.match)
        if m.record is None:
            if m.status != "aborted":
                raise ValueError(f"match {m.match}: {m.status}, but it has no record")
            continue
        try:
            loads(m.record)
        except RecordError as e:
            raise ValueError(f"match {m.match}: its record is not one: {e}") from None
    (root / RECORDS).mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    entries = []
    for m in bundle.matches:
        name: str | None = None
        if m.record is not None:
            name = f"{RECORDS}/{m.match}.json"
            data = m.record.encode("utf-8")
            (root / name).write_bytes(data)
            files[name] = hashlib.sha256(data).hexdigest()
        entries.append(
            {
                "match": m.match,
                "round": m.round,
                "names": list(m.names),
                "status": m.status,
                # An aborted match has no result (it does not count in the table).
                "ranks": list(m.ranks) if m.status == "finished" else [],
                "absent": list(m.absent),
                "commitment": m.commitment,
                "set": None
                if m.set_id is None
                else {"id": m.set_id, "index": m.set_index, "size": len(m.names)},
                "record": name,
            }
        )
    table = computed_table(bundle.field, bundle.matches)
    manifest = {
        "format": FORMAT,
        "competition": {"name": bundle.name, "file": bundle.competition},
        "stamps": [asdict(s) for s in bundle.stamps],
        "field": list(bundle.field),
        "finals": asdict(bundle.rule),
        "matches": entries,
        "final_table": table_json(table, bundle.stopped),
        "files": files,
    }
    out = root / MANIFEST
    out.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out


class Fault(Exception):
    """The first thing in a bundle that does not match, as one line."""


def verify(path: str | Path) -> str | None:
    """Returns None when the bundle at ``path`` verifies, else the first thing that
    does not match, as one line (see the module's docstring for what is checked)."""
    try:
        _verify(Path(path))
    except Fault as e:
        return str(e)
    return None


def _verify(root: Path) -> None:
    manifest = _manifest(root)
    _check_files(root, manifest)
    field = _strings(manifest.get("field"), "the manifest's field")
    rule = _rule(manifest.get("finals"))
    entries = manifest.get("matches")
    if not isinstance(entries, list):
        raise Fault("the manifest's matches are not a list")
    matches = [_checked_match(root, i, entry) for i, entry in enumerate(entries)]
    _check_table(manifest, field, rule, matches)


def _manifest(root: Path) -> dict[str, Any]:
    if not root.is_dir():
        raise Fault(f"{root}: not a bundle directory")
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise Fault(f"{root}: no {MANIFEST}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise Fault(f"{MANIFEST}: not JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise Fault(f"{MANIFEST}: format is not {FORMAT}")
    return manifest


def _check_files(root: Path, manifest: dict[str, Any]) -> None:
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise Fault(f"{MANIFEST}: files is not an object of hashes")
    for name, digest in sorted(files.items()):
        file = root / name
        if ".." in Path(name).parts or Path(name).is_absolute():
            raise Fault(f"{MANIFEST}: file {name!r} is outside the bundle")
        if not file.is_file():
            raise Fault(f"{name}: listed in the manifest but missing")
        actual = hashlib.sha256(file.read_bytes()).hexdigest()
        if actual != digest:
            raise Fault(f"{name}: sha256 {actual} is not the manifest's {digest}")
    for file in sorted(root.rglob("*")):
        name = file.relative_to(root).as_posix()
        if file.is_file() and name != MANIFEST and name not in files:
            raise Fault(f"{name}: not listed in the manifest")


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Fault(f"{what} is not a list of names")
    return tuple(value)


def _rule(value: Any) -> Rule:
    try:
        rule = Rule(**value)
    except TypeError:
        raise Fault("the manifest's finals are not {top, confidence, budget, tables}") from None
    if not (
        isinstance(rule.top, int)
        and isinstance(rule.budget, int)
        and isinstance(rule.tables, list)
        and all(isinstance(t, int) for t in rule.tables)
    ):
        raise Fault("the manifest's finals top, budget and tables are not whole numbers")
    return Rule(rule.top, rule.confidence, rule.budget, tuple(rule.tables))


def _checked_match(root: Path, i: int, entry: Any) -> Match:
    """Returns manifest entry ``i`` as a :class:`Match` once its record verifies and
    agrees with it; raises Fault naming the first thing that does not."""
    if not isinstance(entry, dict) or not isinstance(entry.get("match"), str):
        raise Fault(f"{MANIFEST}: match {i + 1} has no id")
    mid = entry["match"]
    where = f"match {mid}"
    name = entry.get("record")
    if name is None and entry.get("status") == "aborted":
        return _unrecorded(entry, mid)
    if name != f"{RECORDS}/{mid}.json" or not (root / name).is_file():
        raise Fault(f"{where}: its record should be {RECORDS}/{mid}.json")
    text = (root / name).read_text(encoding="utf-8")
    try:
        record = loads(text)
    except RecordError as e:
        raise Fault(f"{name}: not a record: {e}") from None
    faults = verify_deal(record)
    if faults:
        raise Fault(f"{name}: {faults[0]}")
    if record.meta.get("match") != mid:
        raise Fault(f"{name}: meta.match {record.meta.get('match')!r} is not {mid}")
    fair = record.meta["fairness"]
    if fair.get("commitment") != entry.get("commitment"):
        raise Fault(f"{where}: the manifest's commitment is not the record's")
    deal_set = entry.get("set")
    if deal_set is not None:
        stated = fair.get("set")
        if not isinstance(stated, dict) or any(
            stated.get(k) != deal_set.get(k) for k in ("id", "index", "size")
        ):
            raise Fault(f"{where}: the manifest's set is not the record's")
    names = _strings(entry.get("names"), f"{where}: names")
    if list(names) != record.meta.get("names"):
        raise Fault(f"{where}: the manifest's names are not the record's")
    status = entry.get("status")
    try:
        state = record.replay()
        faults = result_faults(record)
    except RecordError as e:
        raise Fault(f"{name}: does not replay: {e}") from None
    if faults:
        raise Fault(f"{name}: {faults[0]}")
    ranks = entry.get("ranks")
    if status == "finished":
        if not state.is_over:
            raise Fault(f"{where}: finished, but its record's game is not over")
        if ranks != state.ranking():
            raise Fault(
                f"{where}: the manifest's ranks {ranks} are not the ranks its record "
                f"replays to ({state.ranking()})"
            )
    elif status == "aborted":
        if ranks:
            raise Fault(f"{where}: aborted, but the manifest gives it ranks")
    else:
        raise Fault(f"{where}: status {status!r} is neither finished nor aborted")
    rnd = entry.get("round")
    if not isinstance(rnd, int):
        raise Fault(f"{where}: round is not a whole number")
    absent = _strings(entry.get("absent"), f"{where}: absent")
    if not set(absent) <= set(names):
        raise Fault(f"{where}: absent names someone not seated")
    return Match(
        mid,
        rnd,
        names,
        status,
        tuple(ranks or ()),
        absent,
        str(fair.get("commitment")),
        None if deal_set is None else str(deal_set.get("id")),
        None if deal_set is None else deal_set.get("index"),
        text,
    )


def _unrecorded(entry: dict[str, Any], mid: str) -> Match:
    """Returns an aborted match the bundle holds no record of (its host went away
    first) as the manifest states it: it counts for nothing but the table's
    balance, so there is nothing to replay. Raises Fault for a malformed entry."""
    where = f"match {mid}"
    if entry.get("ranks"):
        raise Fault(f"{where}: aborted, but the manifest gives it ranks")
    rnd = entry.get("round")
    if not isinstance(rnd, int):
        raise Fault(f"{where}: round is not a whole number")
    names = _strings(entry.get("names"), f"{where}: names")
    absent = _strings(entry.get("absent"), f"{where}: absent")
    deal_set = entry.get("set")
    if deal_set is not None and not isinstance(deal_set, dict):
        raise Fault(f"{where}: its set is not {{id, index, size}}")
    return Match(
        mid,
        rnd,
        names,
        "aborted",
        (),
        absent,
        str(entry.get("commitment", "")),
        None if deal_set is None else str(deal_set.get("id")),
        None if deal_set is None else deal_set.get("index"),
        None,
    )


def _check_table(
    manifest: dict[str, Any], field: tuple[str, ...], rule: Rule, matches: list[Match]
) -> None:
    stated = manifest.get("final_table")
    if not isinstance(stated, dict):
        raise Fault(f"{MANIFEST}: no final_table")
    try:
        table = computed_table(field, matches)
    except ValueError as e:
        raise Fault(f"the final table cannot be computed: {e}") from None
    # The finals look at the stopping rule after every round: none but the last
    # may have stopped them.
    try:
        next_matches = round_matches(len(field), rule.tables)
    except ValueError as e:
        raise Fault(f"the manifest's finals: {e}") from None
    rounds = sorted({m.round for m in matches})
    for r in rounds[:-1]:
        early = stop(
            computed_table(field, [m for m in matches if m.round <= r]),
            rule.top,
            rule.confidence,
            rule.budget,
            next_matches,
        )
        if early is not None:
            raise Fault(
                f"the finals should have stopped after round {r} ({early.reason}, "
                f"{early.matches} matches), but went on"
            )
    stopped = stop(table, rule.top, rule.confidence, rule.budget, next_matches)
    claimed = stated.get("stop")
    if stopped is not None:
        expected = table_json(table, stopped)
    elif isinstance(claimed, dict) and claimed.get("reason") not in ("settled", "budget"):
        expected = table_json(table, claimed.get("reason"))  # e.g. the competition closed
    else:
        expected = table_json(table, None)
    for key in ("matches", "stop"):
        if stated.get(key) != expected[key]:
            raise Fault(
                f"the final table's {key} {json.dumps(stated.get(key))} is not the "
                f"recomputed {json.dumps(expected[key])}"
            )
    lines = stated.get("lines")
    if not isinstance(lines, list) or len(lines) != len(expected["lines"]):
        raise Fault(f"the final table should have {len(expected['lines'])} lines")
    for got, want in zip(lines, expected["lines"], strict=True):
        if got != want:
            key = next(
                (k for k in want if not isinstance(got, dict) or got.get(k) != want[k]), "lines"
            )
            raise Fault(
                f"the final table's line {want['rank']} ({want['name']}): {key} "
                f"{json.dumps(got.get(key) if isinstance(got, dict) else got)} is not the "
                f"recomputed {json.dumps(want[key])}"
            )
