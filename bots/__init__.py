"""Example and reference bots, written only against ``client_sdk`` and ``mammamia``.

- ``random_bot.RandomBot`` (``random``): uniform among the legal options.
- ``greedy.GreedyBot`` (``greedy``): plays an order once the oven seems to hold it.
- ``counter.CounterBot`` (``counter``): counts every public card and times its orders.
- ``search.SearchBot`` (``search``): Monte Carlo search over sampled deals within a time
  budget per decision (``search@budget_ms=50``).
"""
