"""The ladder: bots register, wait, are matched, play and are rated, continuously.

ratings.py    OpenSkill's Plackett-Luce model: free-for-all with ties
confidence.py how sure the standings are: intervals, neighbours' odds
standings.py  the standings' lines with their interval, for every reader (gRPC, web)
scheduler.py  who plays whom (pure), and the loop that keeps matches going
ladder.py     the running ladder: registrations, the lobby's tables played, results rated
lobby.py      where entered bots wait, are seated together and told their seats
shared_lobby.py  the lobby of many hosts on one PostgreSQL database
leagues.py    leagues with boss bots (``serve --leagues``): the flag, the bosses' seats
matches.py    the server's matches as the ladder needs them, and how one ended
settling.py   what a drain must see through: matches to their stored results
service.py    the Ladder gRPC servicer, thin
serve.py      the ladder's ``mammamia serve`` flags and its installation in the server
cli.py        ``mammamia ladder`` (standings, matches, record, rerate), ``mammamia demo``
cli_standings.py  the standings as the commands fetch and print them
demo.py       a server with a demo ladder of built-in bots (``make run``)

The ladder's tables (bots, results, ratings, tallies) are the storage layer's:
``server.db.ladder``.
"""
