"""The ladder's storage: bots, ladder matches, results per seat, ratings and tallies.

    rows.py      what the tables hold, as the ladder reads it (rows, errors, names)
    reads.py     the reads (LadderReads), and a reader thread for the big ones
    entries.py   the Enter streams of many hosts, their claims, scheduling passes
    rating.py    applying stored results to ratings and tallies, exactly once
    leagues.py   the leagues, each bot's league, and the moves decided as matches are rated
    store.py     LadderStore: the connections, bots, duplicate sets, matches, results
    scrimmages.py  the scrimmages an owner asks for and their matches, never rated


The ladder keeps its tables in the server's own database (an SQLite file in WAL mode,
or PostgreSQL: see :mod:`server.db.connection`), beside the server's matches and records;
their schema is the migrations in ``server/db/migrations`` (brought up to date by
:func:`server.db.schema.upgrade` when the store opens):

    ladder_bots      name, hash of the secret key, when registered, when it first
                     entered (NULL: never; such names expire, :meth:`LadderStore.expire`)
    ladder_matches   one row per ladder match: status running | finished | aborted,
                     the finish order, and ``rated`` (its ratings are applied)
    ladder_results   one row per match and seat: the bot, its rank and pizzas, and the
                     match's creation time (a bot's matches are listed from one index)
    ladder_ratings   mu and sigma per bot, for all matches (players 0) and per
                     player count (players 2..5)
    ladder_tallies   per bot and the same scopes: rated games, wins, pizzas delivered
    ladder_totals    per scope: rated matches
    ladder_positions per player count, bot and seat position (1: round 1's first
                     player): rated games, wins and summed ranks
    ladder_sets      one row per duplicate set: its bots, its server seed (secret
                     until the set ends), commitment and status playing | complete | cut
    ladder_entries   per bot with an Enter stream open on some host: the host, the
                     stream's id, when it entered, its host's last heartbeat (on a
                     PostgreSQL database that many hosts share: see
                     ``server.ladder.shared_lobby``)
    ladder_scrimmages, scrimmage_matches
                     the scrimmages and their matches, kept apart from the ladder's
                     (``server.db.ladder.scrimmages``)
    ladder_leagues, ladder_moves
                     the leagues with their bosses, and each move of a bot up a
                     league: when, from, to, why (``server.db.ladder.leagues``)

Guarantees, each kept by one transaction (on SQLite ``BEGIN IMMEDIATE``: the file's one
writer; on PostgreSQL a transaction that first takes the advisory lock
``server.db.connection.LADDER_LOCK``, so that the ladder's writers run one at a time there
too, whichever connection or host they come from):

- a result is written once: finishing a match that is not running changes nothing;
- ratings and tallies are applied from stored results in finish order, exactly
  once: the ratings, the tallies and the match's ``rated`` marker commit together,
  so the tallies always equal a count over the rated results (:meth:`LadderReads.recount`);
- a match cut off by a crash is marked aborted at start-up (unless the server
  stored its record, see :meth:`LadderStore.running`) and never rated;
- a duplicate set ends once: its status and the completion of its sealed records
  (the server's ``matches.record``, :meth:`LadderStore.reveal_set`) commit together.

Reads cost what they return, never the history: the standings and the scheduler's
inputs come from the ratings and tallies (a row per bot), match lists walk an index
newest first and stop at their limit. :class:`LadderReader` runs the reads that
return a lot (standings, match lists) on a thread with a connection of its own.

Keys: a bot's key is 256 random bits (``secrets``), so one SHA-256 of it is as good
as a slow password hash; only the hash is stored.
"""
