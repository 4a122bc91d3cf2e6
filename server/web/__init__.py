"""The arena's read-only web page, served by ``mammamia serve`` itself (docs/web.md).

``serve`` is the server extension (flags ``--web-port``/``--no-web``); ``api`` the
HTTP routes and their JSON; ``reads`` the ladder and record reads on a thread of
their own; ``ratings_history`` a bot's rating over time; ``replay`` a finished
match's record as the steps the replay viewer shows; ``live`` a running match as
the spectator view gives it; ``static/`` the page itself.
"""
