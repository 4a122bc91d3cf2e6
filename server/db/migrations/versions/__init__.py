"""The revisions, oldest first (alembic reads these files by their ``revision`` and
``down_revision``; this file is not one of them)."""
