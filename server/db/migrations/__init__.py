"""The database's schema migrations (alembic): ``env.py`` and one file per revision
in ``versions/``, each plain SQL through ``op.execute``. Run by :mod:`server.db.schema`
whenever the server or the ladder opens a database; never by hand."""
