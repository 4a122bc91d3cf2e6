"""The ladder: bots register, wait, are matched, play and are rated, continuously.

ratings.py    OpenSkill's Plackett-Luce model: free-for-all with ties
scheduler.py  who plays whom (pure), and the loop that keeps matches going
ladder.py     the running ladder: entries, assignments, results, ratings
service.py    the Ladder gRPC servicer, thin
serve.py      the ladder's ``mammamia serve`` flags and its installation in the server
cli.py        ``mammamia ladder`` (standings, matches, record, rerate), ``mammamia demo``
demo.py       a server with a demo ladder of built-in bots (``make run``)
"""
