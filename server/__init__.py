"""The Mamma Mia! game server: the authority that runs matches over gRPC.

    runners.py   every running match (its Runner), creating them, awaiting their results
    match.py     one match: the game, its seats, decisions, deadlines, event logs
    status.py    MatchStatus: a match's status, in memory, in the database, on the wire
    inputs.py    a match's inputs (join, start, answer, tick, abort): applied, journalled
    db/          the storage layer (SQLite or PostgreSQL): matches, records, journal,
                 the ladder's tables; the only package that speaks SQL
    wire.py      the only module that converts between game values and protobuf
    services.py  the gRPC servicers (Seat, Spectate, Organiser), thin
    seating.py   the seats a call takes: Observe's and Play's, PlayMatches', places'
    runner.py    one match on the event loop: its clock, journal, storage and end
    streams.py   what leaves for each stream of a match, and when: the one stream loop
    app.py       ``create_server``: services, health, reflection, drain; extensions
    cli.py       ``mammamia serve`` and ``mammamia match``
    logs.py      structlog configuration
    tokens.py    seat tokens, match ids and organiser keys

Imports point one way: ``server`` imports ``mammamia`` and ``mammamia_pb``, never
``client_sdk`` or ``bots``.
"""
