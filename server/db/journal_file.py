"""The journal's own file beside an SQLite database: one line per record, appended.

:class:`FileJournal` is the journal (``server.db.journal``) of a server on an
SQLite database. A journal input must be durable against a crash of the process before what it
caused is sent (``server.journal``). Appending a line to a file opened with
``O_APPEND`` does that in one ``write`` call: once the call returns the bytes are
in the operating system's cache, which a crash of the process cannot lose (a
power cut can, as with the database's own ``synchronous`` setting). It costs a
few µs on the event loop, against a transaction per input in a database.

The file, ``<db>.journal``, is text: a header line, then one record per line:

- ``S<TAB>match<TAB>setup JSON``: a match's setup;
- ``I<TAB>match<TAB>n<TAB>input JSON``: its input number ``n`` (0, 1, ...);
- ``E<TAB>match``: the match has ended and its record is stored: its lines are
  no longer needed.

It is compacted when it grows: once it holds more than twice the bytes of the
matches still running (and at least ``COMPACT_BYTES``), their lines are written to
a new file that replaces it (``os.replace``: a crash leaves one whole file or
the other). Compaction writes only what the running matches hold, so the file
stays bounded by them, and its cost is spread over the appends that grew it.

Reading it at start-up costs only the matches a failure touched: a match with a
line that does not parse (such as a last line cut short by a failed write), whose
inputs do not run 0, 1, 2, ... without a gap, or that has no setup, is not resumed
(start-up marks it aborted). A file without the header, or with a line that names
no match, is set aside as ``<file>.damaged`` (all its matches aborted) and a new
one started.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import structlog

from .connection import StorageError
from .journal import Journal

log = structlog.get_logger()

HEADER: Final = b"mammamia-journal 1\n"
"""The first line of a journal file: its format and version."""

COMPACT_BYTES: Final = 4 << 20
"""The size below which the file is never compacted."""


@dataclass(slots=True)
class Held:
    """What the file holds of one match: its setup and inputs (parsed, as read at
    start-up) and the lines they take (bytes, what a compaction writes again)."""

    setup: dict[str, Any] | None = None
    inputs: dict[int, dict[str, Any]] = field(default_factory=dict)
    lines: list[bytes] = field(default_factory=list)

    def ordered(self) -> list[dict[str, Any]] | None:
        """Returns the inputs in order, or None when one is missing."""
        if sorted(self.inputs) != list(range(len(self.inputs))):
            return None
        return [self.inputs[n] for n in range(len(self.inputs))]


class JournalFile:
    """An open journal file: what it held when opened (:meth:`held`), and appends.

    Every method raises OSError when the file cannot be written."""

    def __init__(self, path: Path, compact_bytes: int = COMPACT_BYTES) -> None:
        self.path = path
        self.compact_bytes = compact_bytes
        self._held = _read(path)
        self._live: dict[str, list[bytes]] = {m: h.lines for m, h in self._held.items()}
        self._live_bytes = sum(len(line) for lines in self._live.values() for line in lines)
        self._fd = -1
        self._size = 0
        self._torn = False  # a write failed midway: the next one starts a line
        self._rewrite()

    def held(self) -> dict[str, Held]:
        """Returns, by match id, what the file held when it was opened (once: the
        parsed inputs are not kept after, only the lines of the running matches)."""
        held, self._held = self._held, {}
        return held

    def setup(self, match_id: str, setup: str) -> None:
        """Appends a match's setup (JSON text)."""
        self._append(match_id, b"S\t%s\t%s\n" % (match_id.encode(), setup.encode()))

    def input(self, match_id: str, n: int, step: str) -> None:
        """Appends a match's input number ``n`` (JSON text)."""
        self._append(match_id, b"I\t%s\t%d\t%s\n" % (match_id.encode(), n, step.encode()))

    def end(self, match_id: str) -> None:
        """Appends that a match has ended; its lines go at the next compaction."""
        lines = self._live.pop(match_id, None)
        if lines is None:
            return
        self._live_bytes -= sum(len(line) for line in lines)
        self._write(b"E\t%s\n" % match_id.encode())
        if self._size > max(self.compact_bytes, 2 * self._live_bytes):
            self._rewrite()

    def close(self) -> None:
        """Closes the file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _append(self, match_id: str, line: bytes) -> None:
        self._write(line)
        self._live.setdefault(match_id, []).append(line)
        self._live_bytes += len(line)

    def _write(self, line: bytes) -> None:
        if self._torn:
            line = b"\n" + line
        written = 0
        try:
            while written < len(line):
                written += os.write(self._fd, line[written:])
        except OSError:
            self._torn = written > 0 or self._torn
            self._size += written
            raise
        self._torn = False
        self._size += written

    def _rewrite(self) -> None:
        """Replaces the file with one holding the running matches' lines only."""
        fresh = self.path.with_name(self.path.name + ".new")
        data = HEADER + b"".join(line for lines in self._live.values() for line in lines)
        fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.replace(fresh, self.path)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                fresh.unlink()
            raise
        self.close()
        self._fd, self._size, self._torn = fd, len(data), False


def _read(path: Path) -> dict[str, Held]:
    """Returns what the file at ``path`` holds of each match not ended (nothing for a
    missing file; a file that is not a journal is set aside first)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    if not data.startswith(HEADER):
        if data:
            _set_aside(path, "not a journal file")
        return {}
    held: dict[str, Held] = {}
    damaged: set[str] = set()
    lines = data[len(HEADER) :].split(b"\n")
    for number, line in enumerate(lines, start=2):
        last = number == len(lines) + 1
        if last and not line:
            break
        try:
            if last:
                raise ValueError("cut short")
            _take(held, line)
        except (ValueError, IndexError) as e:  # (json's errors are ValueErrors)
            match_id = _match_of(line)
            if match_id is None:
                _set_aside(path, f"line {number} names no match")
                return {}
            log.warning(
                "journal_line_skipped",
                file=str(path),
                line=number,
                match=match_id,
                reason=str(e)[:200],
            )
            damaged.add(match_id)
    return {m: h for m, h in held.items() if _whole(m, h, m in damaged)}


def _set_aside(path: Path, reason: str) -> None:
    log.error("journal_set_aside", file=str(path), reason=reason)
    path.replace(path.with_name(path.name + ".damaged"))


def _match_of(line: bytes) -> str | None:
    """Returns the match a line names, or None when it names none."""
    fields = line.split(b"\t", 2)
    if len(fields) < 2 or fields[0] not in (b"S", b"I", b"E") or not fields[1]:
        return None
    return fields[1].decode("utf-8", "replace")


def _take(held: dict[str, Held], line: bytes) -> None:
    """Adds one line's record to ``held``; raises ValueError when it does not parse."""
    kind, rest = line.split(b"\t", 1)
    if kind == b"E":
        held.pop(rest.decode(), None)
        return
    match_id, rest = rest.split(b"\t", 1)
    h = held.setdefault(match_id.decode(), Held())
    if kind == b"S":
        h.setup = json.loads(rest)
    elif kind == b"I":
        n, step = rest.split(b"\t", 1)
        h.inputs[int(n)] = json.loads(step)
    else:
        raise ValueError(f"unknown record {kind!r}")
    h.lines.append(line + b"\n")


def _whole(match_id: str, held: Held, damaged: bool) -> bool:
    """Returns whether a match's setup and inputs are all there (logs why not)."""
    why = (
        "a line of it is damaged"
        if damaged
        else "no setup"
        if held.setup is None
        else "an input is missing"
        if held.ordered() is None
        else None
    )
    if why is not None:
        log.error("journal_match_incomplete", match=match_id, reason=why)
    return why is None


class FileJournal(Journal):
    """The journal in the file beside an SQLite database, written on the event loop
    only (see the module). Opening it moves in the matches of an earlier version's
    journal (``<db>.inputs``, an SQLite file) if there is one."""

    def __init__(self, db_path: str | Path) -> None:
        super().__init__()
        self._file = _open_journal_file(db_path)
        self._written: asyncio.Future[None] | None = None

    def close(self) -> None:
        self._file.close()

    def _held(
        self, only: Collection[str] | None = None
    ) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
        # A file is one server's: no other host hands it matches (``only`` is for them).
        if only is not None:
            return []
        out = []
        for match_id, held in self._file.held().items():
            inputs = held.ordered()
            assert held.setup is not None and inputs is not None  # (only whole ones)
            out.append((match_id, held.setup, inputs))
        return out

    def _begin(self, match_id: str, setup: str) -> None:
        try:
            self._file.setup(match_id, setup)
        except OSError as e:
            raise StorageError(f"journal: {e}") from e

    def _append(self, match_id: str, n: int, step: str) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        try:
            self._file.input(match_id, n, step)
        except OSError as e:
            log.error("journal_write_failed", error=str(e), inputs=1)
            failed: asyncio.Future[None] = loop.create_future()
            failed.set_exception(StorageError(f"journal: {e}"))
            return failed
        # Written at once: every input shares one done future, instead of a future
        # made and resolved per decision.
        if self._written is None or self._written.get_loop() is not loop:
            self._written = loop.create_future()
            self._written.set_result(None)
        return self._written

    def _forget(self, match_id: str) -> None:
        try:
            self._file.end(match_id)
        except OSError as e:  # its lines are only replayed again, and forgotten
            log.warning("journal_end_not_written", match=match_id, error=str(e))


def journal_file(db_path: str | Path) -> Path:
    """Returns the journal file kept beside an SQLite database."""
    return Path(f"{db_path}.journal")


OLD_SIDE_FILE_ENDS: Final = (".inputs", ".inputs-wal", ".inputs-shm")
"""The files of the SQLite journal file of earlier versions (after the database's
name)."""


def _open_journal_file(db_path: str | Path) -> JournalFile:
    """Returns the journal file beside an SQLite database, open, after moving into it
    the matches of an earlier version's journal (``<db>.inputs``) if there is one."""
    path = journal_file(db_path)
    old = Path(f"{db_path}.inputs")
    if old.exists():
        try:
            setups, inputs = _read_old_side_file(old)
        except sqlite3.DatabaseError as e:
            # As that version did with a file it could not read: set aside, its
            # matches aborted at start-up.
            log.error("journal_set_aside", file=str(old), error=str(e))
            for end in OLD_SIDE_FILE_ENDS:
                with contextlib.suppress(OSError):
                    Path(f"{db_path}{end}").replace(f"{db_path}{end}.damaged")
            return JournalFile(path)
        moved = JournalFile(path)
        try:
            for match_id, setup in setups:
                moved.setup(match_id, setup)
            for match_id, n, step in inputs:
                moved.input(match_id, n, step)
        finally:
            moved.close()
        # Only once every line is in the new file does the old one go.
        for end in OLD_SIDE_FILE_ENDS:
            with contextlib.suppress(OSError):
                Path(f"{db_path}{end}").unlink()
        log.info("journal_moved", file=str(old), to=str(path), matches=len(setups))
    return JournalFile(path)


def _read_old_side_file(path: Path) -> tuple[list[tuple[str, str]], list[tuple[str, int, str]]]:
    """Returns the setups and the inputs, in order, of an earlier version's journal."""
    db = sqlite3.connect(str(path))
    try:
        setups = db.execute("SELECT match_id, setup FROM match_setups").fetchall()
        inputs = db.execute(
            "SELECT match_id, n, input FROM match_inputs ORDER BY match_id, n"
        ).fetchall()
    finally:
        db.close()
    return setups, inputs
