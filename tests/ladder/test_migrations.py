"""The schema's migrations (server/migrations, run by server.schema): a new file and a
file made before migrations both arrive at the newest revision, with their data."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from server import schema


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
    assert {"matches", "ladder_bots", "ladder_matches", "ladder_results",
            "ladder_ratings"} <= tables
