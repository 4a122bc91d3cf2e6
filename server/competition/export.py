"""``mammamia competition export``: a competition's results, read from its
database, written as a bundle (``server.competition.bundle``) that ``mammamia
verify BUNDLE`` checks offline."""

from __future__ import annotations

from pathlib import Path

from server.db.competition import CompetitionStore
from server.status import MatchStatus

from . import bundle
from .config import parse


class ExportError(Exception):
    """The database holds no competition to export, or not the one named."""


def collect(store: CompetitionStore, name: str | None = None) -> bundle.Bundle:
    """Returns what the bundle of competition ``name`` (None: the database's only
    one) holds: its file, stamps, field, rule and ended finals matches with their
    records, in the order played. Raises ExportError."""
    names = store.names()
    if name is None:
        if len(names) != 1:
            raise ExportError(
                "the database holds no competition"
                if not names
                else f"the database holds {len(names)} competitions: name one with --name "
                f"({', '.join(names)})"
            )
        name = names[0]
    state = store.state(name)
    if state is None:
        raise ExportError(f"the database holds no competition named {name!r}")
    rules = parse(state.file, f"{name} (as stored)").finals
    matches = []
    for m in store.matches(name):
        if m.status == MatchStatus.RUNNING:
            continue  # still playing: not part of the results yet
        record = store.record(m.match_id)
        if record is None and m.status != MatchStatus.ABORTED:
            raise ExportError(f"finals match {m.match_id} has no stored record")
        matches.append(
            bundle.Match(
                m.match_id,
                m.round - 1,  # the bundle counts rounds from 0
                m.names,
                m.status,
                m.ranks,
                m.absent,
                m.commitment,
                m.set_id,
                m.set_index,
                record,
            )
        )
    return bundle.Bundle(
        name,
        state.file,
        tuple(bundle.Stamp(s.phase, s.at, s.who, s.reason) for s in state.stamps),
        state.field or (),
        bundle.Rule(rules.top, rules.confidence, rules.budget, rules.tables),
        tuple(matches),
        state.final_reason,
    )


def export(db: str, out: str | Path, name: str | None = None) -> Path:
    """Writes the bundle of competition ``name`` in database ``db`` (an SQLite file
    or a PostgreSQL URL) to the directory ``out``; returns its manifest's path.
    Raises ExportError, and what ``bundle.write`` raises."""
    store = CompetitionStore(db)
    try:
        return bundle.write(out, collect(store, name))
    finally:
        store.close()
