"""The journal: every running match written ahead, so that a restarted server resumes it.

A match is a state machine (``server.match``): its state is what its inputs made of
it. The journal keeps, per match, its **setup** (how it was created: players,
colours, the seeds, the time control, names, and the SHA-256 of each seat token)
and every **input** it took after that, in order: a seat joining (with its name and
client seed), the start, an accepted answer, a default applied at a deadline, an
abort. A restarted server replays them (:func:`replay`) and the match goes on.

The invariant: **no event an input caused leaves the server before the input is
durable** against a crash of the process. :meth:`Journal.append` returns a future
that is done once the input is committed; the runner shows streams only the log up
to what is committed (``server.runner``), and a unary answer is replied to after.

Where the journal is kept:

- with an SQLite database, in a file of its own beside it (``<db>.journal``,
  ``server.journal_file``), one line appended per input on the event loop: once
  the write returns the line is in the operating system's cache, which a crash of
  the process cannot lose. It survives the process, not a power cut. The cost per
  decision is a few µs and no hand-off to another thread. (Earlier versions kept
  an SQLite file, ``<db>.inputs``; its matches are moved to the new file at the
  first start.)
- with PostgreSQL, in the database itself (tables ``match_setups`` and
  ``match_inputs``), through the writer thread: appends are grouped, the inputs of
  every match that came while one commit ran going in one transaction after it.

Rows go once the match's end is stored (its record then holds everything). On a
PostgreSQL database that many hosts share, each setup names the host that runs the
match (``match_setups.host``), and a host resumes its own matches only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import structlog

from mammamia import new_game
from mammamia.actions import action_from_json, action_to_json
from mammamia.fairness import DealSet, Fairness

from . import storage as st
from .journal_file import JournalFile
from .match import Match, Settings

log = structlog.get_logger()

Input = dict[str, Any]


def token_hash(token: str) -> str:
    """Returns the hex SHA-256 of a seat token (what the journal keeps of it)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Unfinished:
    """A match the journal holds that had not ended: its setup and inputs."""

    match_id: str
    setup: dict[str, Any]
    inputs: tuple[Input, ...]


def setup_of(match: Match, token_hashes: Sequence[str], first_player: int | None) -> dict[str, Any]:
    """Returns what recreates ``match`` as it was created (JSON-ready)."""
    fair = match.fairness
    assert fair is not None, "only matches dealt from seeds are journalled"
    s = match.settings
    return {
        "players": match.players,
        "colours": list(match.state.colours),
        "first_player": first_player,
        "server_seed": fair.server_seed,
        "source": fair.source,
        "first_player_drawn": fair.first_player_drawn,
        "deadline_ms": s.deadline_ms,
        "time_bank_ms": s.time_bank_ms,
        "ladder": s.ladder,
        "names": list(s.names),
        "created": match.created,
        "tokens": list(token_hashes),
        "deal_set": None if fair.deal_set is None else fair.deal_set.meta(),
    }


def replay(unfinished: Unfinished) -> Match:
    """Returns the match its setup and inputs make; raises ValueError (or the rules'
    errors) when they do not replay."""
    s = unfinished.setup
    players = int(s["players"])
    deal_set = s.get("deal_set")
    fairness = Fairness(
        unfinished.match_id,
        s["server_seed"],
        s["source"],
        [""] * players,
        bool(s["first_player_drawn"]),
        None if deal_set is None else DealSet(deal_set["id"], deal_set["index"], deal_set["size"]),
    )
    game = new_game(players, fairness.seed, s["colours"], s["first_player"])
    settings = Settings(
        deadline_ms=s["deadline_ms"],
        time_bank_ms=s["time_bank_ms"],
        ladder=s["ladder"],
        names=list(s["names"]),
    )
    match = Match(
        unfinished.match_id, game, fairness.seed, settings, s["created"], fairness=fairness
    )
    for step in unfinished.inputs:
        kind = step["k"]
        if kind == "join":
            match.join(step["seat"], step.get("name"), step.get("seed"))
        elif kind == "start":
            match.start(step["at"])
        elif kind == "answer":
            _, action = action_from_json(step["action"])
            outcome = match.answer(step["seat"], step["decision"], None, action, step["at"])
            if not outcome.accepted:
                raise ValueError(
                    f"match {match.id}: the journalled answer to "
                    f"{step['decision']} is refused on replay: {outcome.message}"
                )
        elif kind == "tick":
            match.tick(step["at"], step["absent"])
        elif kind == "abort":
            match.abort(step["reason"])
        else:
            raise ValueError(f"match {match.id}: unknown journal input {kind!r}")
    return match


def answer_input(seat: int, decision_id: str, action: Any, at: float) -> Input:
    """Returns the input of an accepted answer."""
    return {
        "k": "answer",
        "seat": seat,
        "decision": decision_id,
        "action": action_to_json(seat, action),
        "at": at,
    }


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


class Journal:
    """The journal of one server's running matches (see the module for where)."""

    def __init__(self, storage: st.Storage) -> None:
        self.storage = storage
        # With SQLite: the journal file, written on the event loop only. Else: the
        # database, through a connection the writer thread alone uses.
        self._file: JournalFile | None = None
        self._db: st.Connection | None = None
        if storage.dialect == st.SQLITE:
            self._file = _open_journal_file(storage.path)
        else:
            self._db = st.connect(storage.path, durable=False)
        self._pending: list[tuple[str, int, str, asyncio.Future[None]]] = []
        self._setups: list[tuple[str, str]] = []
        self._flushing = False
        self._flusher: asyncio.Future[None] | None = None
        self._count: dict[str, int] = {}
        self._written: asyncio.Future[None] | None = None

    def close(self) -> None:
        """Closes the journal's file or connection (after the writer has run every
        write)."""
        if self._file is not None:
            self._file.close()
        if self._db is not None:
            self._db.close()

    def unfinished(self) -> list[Unfinished]:
        """Returns the journalled matches (for start-up: every one has not ended)."""
        if self._file is not None:
            out = []
            for match_id, held in self._file.held().items():
                inputs = held.ordered()
                assert held.setup is not None and inputs is not None  # (only whole ones)
                out.append(Unfinished(match_id, held.setup, tuple(inputs)))
                self._count[match_id] = len(inputs)
            return out
        db = self.storage.db
        setups = db.execute(
            "SELECT match_id, setup FROM match_setups WHERE host = ?", (self.storage.host_id,)
        ).fetchall()
        out = []
        for match_id, setup in setups:
            rows = db.execute(
                "SELECT input FROM match_inputs WHERE match_id = ? ORDER BY n", (match_id,)
            ).fetchall()
            out.append(
                Unfinished(match_id, json.loads(setup), tuple(json.loads(r[0]) for r in rows))
            )
            self._count[match_id] = len(rows)
        return out

    def reinstate(self, statuses: dict[str, str]) -> None:
        """Marks the stored rows of resumed matches with their status again (waiting or
        running: start-up marked every unfinished row aborted). For start-up, on the
        calling thread."""
        with st.transaction(self.storage.db) as db:
            db.executemany(
                "UPDATE matches SET status = ?, ended = NULL, reason = NULL WHERE id = ?",
                [(status, m) for m, status in statuses.items()],
            )

    def begin(self, match_id: str, setup: dict[str, Any]) -> None:
        """Queues a new match's setup, to be committed before any of its inputs."""
        self._count[match_id] = 0
        if self._file is not None:
            try:
                self._file.setup(match_id, json.dumps(setup))
            except OSError as e:
                raise st.StorageError(f"journal: {e}") from e
            return
        self._setups.append((match_id, json.dumps(setup)))
        self._kick()

    def append(self, match_id: str, step: Input) -> asyncio.Future[None]:
        """Returns a future done once ``step`` is committed after every input of the
        match given before it (failed with StorageError when it cannot be)."""
        n = self._count.get(match_id, 0)
        self._count[match_id] = n + 1
        loop = asyncio.get_running_loop()
        if self._file is not None:
            try:
                self._file.input(match_id, n, json.dumps(step))
            except OSError as e:
                log.error("journal_write_failed", error=str(e), inputs=1)
                failed: asyncio.Future[None] = loop.create_future()
                failed.set_exception(st.StorageError(f"journal: {e}"))
                return failed
            # Written at once: every input shares one done future, instead of a
            # future made and resolved per decision.
            if self._written is None or self._written.get_loop() is not loop:
                self._written = loop.create_future()
                self._written.set_result(None)
            return self._written
        done: asyncio.Future[None] = loop.create_future()
        self._pending.append((match_id, n, json.dumps(step), done))
        self._kick()
        return done

    def forget(self, match_id: str) -> None:
        """Queues removing an ended match's rows (its record is stored)."""
        self._count.pop(match_id, None)
        if self._file is not None:
            try:
                self._file.end(match_id)
            except OSError as e:  # its lines are only replayed again, and forgotten
                log.warning("journal_end_not_written", match=match_id, error=str(e))
            return
        self.storage.writer.send(self._delete, match_id)

    def _kick(self) -> None:
        if not self._flushing:
            self._flushing = True
            self._flusher = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        try:
            while self._pending or self._setups:
                setups, self._setups = self._setups, []
                batch, self._pending = self._pending, []
                try:
                    await self.storage.writer.run(
                        self._commit, setups, [(m, n, text) for m, n, text, _ in batch]
                    )
                except (sqlite3.Error, st.PostgresError, OSError) as e:
                    log.error("journal_write_failed", error=str(e), inputs=len(batch))
                    for *_, done in batch:
                        if not done.done():
                            done.set_exception(st.StorageError(f"journal: {e}"))
                    continue
                for *_, done in batch:
                    if not done.done():
                        done.set_result(None)
        finally:
            self._flushing = False

    def _commit(self, setups: list[tuple[str, str]], inputs: list[tuple[str, int, str]]) -> None:
        assert self._db is not None
        with st.transaction(self._db) as db:
            if setups:
                host = self.storage.host_id
                db.executemany(
                    "INSERT INTO match_setups (match_id, setup, host) "
                    "VALUES (?, ?, ?) ON CONFLICT (match_id) DO UPDATE SET "
                    "setup = excluded.setup",
                    [(match_id, setup, host) for match_id, setup in setups],
                )
            if inputs:
                db.executemany(
                    "INSERT INTO match_inputs (match_id, n, input) VALUES (?, ?, ?)"
                    " ON CONFLICT (match_id, n) DO UPDATE SET input = "
                    "excluded.input",
                    inputs,
                )

    def _delete(self, match_id: str) -> None:
        assert self._db is not None
        with st.transaction(self._db) as db:
            db.execute("DELETE FROM match_inputs WHERE match_id = ?", (match_id,))
            db.execute("DELETE FROM match_setups WHERE match_id = ?", (match_id,))
