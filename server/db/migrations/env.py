"""Alembic's environment: runs the migrations on the connection :mod:`server.db.schema`
hands over (``config.attributes["connection"]``), all in one transaction.

SQLite takes schema changes inside a transaction, so every pending revision and the
``alembic_version`` row commit together: a crash in the middle leaves the database at
the revision it had. The transaction is ``BEGIN IMMEDIATE`` (see ``server.db.schema``),
so two processes opening one old file at once upgrade it once.

Offline (``alembic upgrade --sql``), the SQL is printed for the URL in the config's
``sqlalchemy.url`` (SQLite when none is set), for an operator to read.
"""

from __future__ import annotations

from alembic import context

config = context.config


def run_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url") or "sqlite://",
        literal_binds=True,
        transactional_ddl=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes["connection"]
    context.configure(connection=connection, transactional_ddl=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
