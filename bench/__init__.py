"""Benchmarks of the arena: one module per benchmark, each exposing ``run(...) -> dict``.

``python -m bench`` runs them all, prints a table and writes the figures as JSON
(see ``bench/__main__.py``); ``python -m bench.NAME`` runs one. Speed is measured
here, never asserted in tests.
"""
