"""The journal: every running match written ahead, so that a restarted server resumes it.

The journal keeps, per match, its **setup** (how it was created:
``server.inputs.setup_of``) and every **input** it took after that, in order
(``server.inputs``: a seat joining, the start, an accepted answer, a default
applied at a deadline, an abort). A restarted server replays them
(``server.inputs.replay``) and the match goes on.

The invariant: **no event an input caused leaves the server before the input is
durable** against a crash of the process. :meth:`Journal.append` returns a future
that is done once the input is committed; the runner shows streams only the log up
to what is committed (``server.runner``), and a unary answer is replied to after.

:class:`Journal` is the one interface; where the journal is kept is its
implementation's business, chosen once, by ``Storage.open_journal``:

- with an SQLite database, in a file of its own beside it (``<db>.journal``,
  :class:`server.db.journal_file.FileJournal`), one line appended per input on the
  event loop: once the write returns the line is in the operating system's cache,
  which a crash of the process cannot lose. It survives the process, not a power
  cut. The cost per decision is a few µs and no hand-off to another thread.
- with PostgreSQL, in the database itself (tables ``match_setups`` and
  ``match_inputs``, :class:`server.db.journal_table.TableJournal`), through the
  writer thread: appends are grouped, the inputs of every match that came while one
  commit ran going in one transaction after it.

Both keep inputs as the JSON of ``server.inputs.to_json`` (the format of every
journal written so far); the typed inputs are converted here, at the boundary.
A match's rows go once its end is stored (its record then holds everything).
"""

from __future__ import annotations

import asyncio
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Sequence
from typing import Any

import structlog

from ..inputs import Input, Unfinished, from_json, to_json

log = structlog.get_logger()


class Journal(ABC):
    """The journal of one server's running matches (see the module for where)."""

    def __init__(self) -> None:
        self._count: dict[str, int] = {}  # inputs written per match
        #: Called with each input's seconds from written ahead to committed (server.metrics).
        self.timed: Callable[[float], None] | None = None

    @abstractmethod
    def close(self) -> None:
        """Closes the journal's file or connection (after the writer has run every
        write)."""

    def unfinished(self, only: Collection[str] | None = None) -> list[Unfinished]:
        """Returns the journalled matches of this server (for start-up: every one has
        not ended), or those of ``only`` (matches taken over from a host that is gone).
        A match whose inputs do not read is left out and forgotten (start-up marks it
        aborted)."""
        out = []
        for match_id, setup, inputs in self._held(only):
            try:
                typed = tuple(from_json(step) for step in inputs)
            except Exception as e:  # inputs this server cannot read (as replay's errors)
                log.error("match_not_resumed", match=match_id, error=repr(e))
                self.forget(match_id)
                continue
            self._count[match_id] = len(inputs)
            out.append(Unfinished(match_id, setup, typed))
        return out

    def begin(self, match_id: str, setup: dict[str, Any]) -> None:
        """Queues a new match's setup, to be committed before any of its inputs."""
        self._count[match_id] = 0
        self._begin(match_id, json.dumps(setup))

    def append(self, match_id: str, step: Input) -> asyncio.Future[None]:
        """Returns a future done once ``step`` is committed after every input of the
        match given before it (failed with StorageError when it cannot be)."""
        n = self._count.get(match_id, 0)
        self._count[match_id] = n + 1
        timed = self.timed
        if timed is None:
            return self._append(match_id, n, json.dumps(to_json(step)))
        start = time.perf_counter()
        done = self._append(match_id, n, json.dumps(to_json(step)))
        if done.done():
            timed(time.perf_counter() - start)
        else:
            done.add_done_callback(lambda _: timed(time.perf_counter() - start))
        return done

    def forget(self, match_id: str) -> None:
        """Queues removing an ended match's setup and inputs (its record is stored)."""
        self._count.pop(match_id, None)
        self._forget(match_id)

    # -- where the journal is kept ---------------------------------------------------

    @abstractmethod
    def _held(
        self, only: Collection[str] | None
    ) -> Sequence[tuple[str, dict[str, Any], Sequence[dict[str, Any]]]]:
        """Returns (match id, setup, inputs in order) of each match held at start-up,
        or of the matches ``only``."""

    @abstractmethod
    def _begin(self, match_id: str, setup: str) -> None:
        """Writes a match's setup (JSON text); raises StorageError when it cannot."""

    @abstractmethod
    def _append(self, match_id: str, n: int, step: str) -> asyncio.Future[None]:
        """Returns a future done once input number ``n`` (JSON text) is committed."""

    @abstractmethod
    def _forget(self, match_id: str) -> None:
        """Removes (or queues removing) a match's setup and inputs."""
