"""The storage layer: every statement the server sends its database is here.

One database (an SQLite file, the default, or PostgreSQL: docs/storage.md) holds the
server's matches and the ladder's tables:

connection.py     connections to either database, transactions, errors, lock keys
writer.py         the writer thread: writes one at a time, in order, off the event loop
reader.py         a reader thread: reads that return a lot, off the event loop
schema.py         brings a database to the newest schema (alembic, ``migrations/``)
migrations/       alembic's revisions, plain SQL, for both databases
matches.py        the server's matches and records (``Storage``, ``MatchRow``)
journal.py        the journal of running matches: one interface (``Journal``) ...
journal_file.py   ... kept in a file beside an SQLite database
journal_table.py  ... or in the database's tables on PostgreSQL
ladder/           the ladder's tables: bots, matches, results, ratings, entries

Nothing outside this package writes SQL (tests/test_architecture.py checks it): the
gRPC services, the ladder, the command line and the web page read and write through
these modules, on SQLite and PostgreSQL alike.
"""
