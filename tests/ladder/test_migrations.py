"""The schema's migrations (server/db/migrations, run by server.db.schema): a new file and a
file made before migrations both arrive at the newest revision, with their data."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from server.db import schema
from server.status import MatchStatus

ROOT = Path(__file__).resolve().parents[2]

# A ladder match as old_database writes it: id, players, status, created, finish
# order, rated, and its seats (name, rank, delivered).
OldMatch = tuple[str, int, str, float, int | None, int, list[tuple[str, int | None, int | None]]]


def test_head_is_the_newest_revision_of_the_migrations() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(schema.MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_heads() == [schema.HEAD]


def test_a_new_file_is_brought_to_head_once(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    assert schema.revision(db) is None
    assert schema.upgrade(db)
    assert schema.revision(db) == schema.HEAD
    assert not schema.upgrade(db)
    with sqlite3.connect(db) as c:
        tables = {n for (n,) in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "matches",
        "ladder_bots",
        "ladder_matches",
        "ladder_results",
        "ladder_ratings",
    } <= tables


def old_database(path: Path) -> None:
    """Makes the file an earlier server made before migrations: the revision-0001
    tables (its SQL, run directly), no alembic_version, and a ladder's history."""
    from server.db.migrations.versions import r0001_initial

    with sqlite3.connect(path) as db:
        for statement in r0001_initial.UPGRADE:
            db.execute(statement)
        db.executemany(
            "INSERT INTO ladder_bots (name, key_hash, created) VALUES (?, ?, ?)",
            [("a", "h-a", 1.0), ("b", "h-b", 2.0), ("c", "h-c", 3.0), ("idle", "h-idle", 4.0)],
        )
        matches: list[OldMatch] = [  # id, players, status, created, finish order, rated, seats
            ("m1", 2, "finished", 10.0, 1, 1, [("a", 1, 5), ("b", 2, 3)]),
            ("m2", 3, "finished", 20.0, 2, 1, [("a", 2, 4), ("b", 1, 6), ("c", 1, 6)]),
            ("m3", 2, "finished", 30.0, 3, 0, [("b", 1, 2), ("c", 2, 1)]),  # not rated yet
            ("m4", 2, "aborted", 40.0, None, 0, [("a", None, None), ("c", None, None)]),
            ("m5", 2, "running", 50.0, None, 0, [("a", None, None), ("b", None, None)]),
        ]
        for match_id, players, status, created, order, rated, seats in matches:
            db.execute(
                "INSERT INTO ladder_matches (match_id, players, status, created,"
                " finish_order, rated) VALUES (?, ?, ?, ?, ?, ?)",
                (match_id, players, status, created, order, rated),
            )
            db.executemany(
                "INSERT INTO ladder_results (match_id, seat, name, rank, delivered)"
                " VALUES (?, ?, ?, ?, ?)",
                [(match_id, s, *seat) for s, seat in enumerate(seats)],
            )
        db.executemany(
            "INSERT INTO ladder_ratings (players, name, mu, sigma) VALUES (?, ?, ?, ?)",
            [
                (0, "a", 26.0, 7.0),
                (0, "b", 27.0, 7.0),
                (0, "c", 25.5, 8.0),
                (2, "a", 27.0, 8.0),
                (2, "b", 23.0, 8.0),
                (3, "a", 22.0, 8.0),
                (3, "b", 27.0, 8.0),
                (3, "c", 27.0, 8.0),
            ],
        )
        db.execute(
            "INSERT INTO matches (id, status, players, names, ladder, created)"
            " VALUES ('m5', 'running', 2, '[\"a\", \"b\"]', 1, '2026-01-01T00:00:00')"
        )


def test_a_database_made_before_migrations_is_upgraded_with_its_data(tmp_path: Path) -> None:
    from server.db.ladder.rows import Tally
    from server.db.ladder.store import LadderStore
    from server.db.matches import Storage

    path = tmp_path / "old.db"
    old_database(path)
    assert schema.revision(path) is None
    storage = Storage(path)  # the server opens it first: upgraded there
    assert schema.revision(path) == schema.HEAD
    m5 = storage.match("m5")
    assert m5 is not None and m5.status == MatchStatus.RUNNING
    storage.close()
    store = LadderStore(path)
    # Tallies and totals were filled from the rated results (m1, m2) only.
    assert (
        store.tallies()
        == store.recount()
        == {"a": Tally(2, 1, 9), "b": Tally(2, 1, 9), "c": Tally(1, 1, 6)}
    )
    assert store.tallies(2) == {"a": Tally(1, 1, 5), "b": Tally(1, 0, 3)}
    assert (store.rated(0), store.rated(2), store.rated(3)) == (2, 1, 1)
    finished, table = store.standings()
    assert finished == 2 and {s.name: s.games for s in table} == {"a": 2, "b": 2, "c": 1}
    # The data is as it was; match lists and first entries come from the history.
    assert [m.match_id for m in store.matches("a")] == ["m5", "m4", "m2", "m1"]
    assert [m.match_id for m in store.matches(status=MatchStatus.FINISHED)] == ["m3", "m2", "m1"]
    assert store.running() == ["m5"] and store.unrated() == 1
    assert {n: store.entered(n) for n in ("a", "b", "c", "idle")} == {
        "a": 10.0,
        "b": 10.0,
        "c": 20.0,
        "idle": None,
    }
    # The unrated result is then rated and counted like any other.
    assert store.apply_ratings() == 1
    assert store.tallies() == store.recount() and store.rated() == 3
    store.close()


def test_an_upgrade_that_fails_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_database(path)
    with sqlite3.connect(path) as db:  # a table in the way of revision 0002
        db.execute("CREATE TABLE ladder_totals (x)")
    with pytest.raises(schema.SchemaError, match="revision head"):
        schema.upgrade(path)
    assert schema.revision(path) is None
    with sqlite3.connect(path) as db:
        columns = [r[1] for r in db.execute("PRAGMA table_info(ladder_results)")]
        tables = {n for (n,) in db.execute("SELECT name FROM sqlite_master")}
    assert "created" not in columns and "ladder_tallies" not in tables


def test_a_damaged_file_or_a_newer_one_is_refused_with_a_reason(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database, though long enough to look like one " * 100)
    with pytest.raises(schema.SchemaError, match="damaged"):
        schema.upgrade(junk)
    newer = tmp_path / "newer.db"
    schema.upgrade(newer)
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(schema.SchemaError, match="newer server"):
        schema.upgrade(newer)


def test_going_back_and_up_again_arrives_at_the_same_tallies(tmp_path: Path) -> None:
    from server.db.ladder.store import LadderStore

    path = tmp_path / "old.db"
    old_database(path)
    store = LadderStore(path)
    store.apply_ratings()
    before = store.tallies(), store.tallies(2), store.rated()
    store.close()
    schema.downgrade(path, "0001")
    assert schema.revision(path) == "0001"
    assert schema.upgrade(path)
    store = LadderStore(path)
    assert (store.tallies(), store.tallies(2), store.rated()) == before
    store.close()


def test_two_processes_opening_one_new_file_upgrade_it_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    code = "import sys; from server.db import schema; schema.upgrade(sys.argv[1])"
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(path)], cwd=ROOT, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    for run in runs:
        _, err = run.communicate(timeout=60)
        assert run.returncode == 0, err
    assert schema.revision(path) == schema.HEAD
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM alembic_version").fetchone() == (1,)
