"""Structured logging for every command of the project, configured once by its entry point.

Modules do ``log = structlog.get_logger()``; per-call context (match, seat, decision
ids) is bound with ``structlog.contextvars`` so every line of a call carries it. Logs
go to stderr (stdout is kept for results such as ``arena --json``): lines a person can
read on a terminal, JSON otherwise.

The one configuration lives here because it is the one place both sides may import:
the server and the tools beside it (``serve``, ``rules-serve``, ``demo``,
``conformance``) and the bots' commands (``bot``, ``arena``, ``watch``) all log alike,
the rules package imports only the standard library, and the SDK never imports the
server. This module imports nothing of the project, only structlog and the standard
library (tests/test_architecture.py holds the server to that one import of the SDK).
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import structlog

LogFormat = Literal["console", "json"]


def configure(
    log_format: LogFormat | None = None,
    level: int = logging.INFO,
    stream: TextIO | None = None,
    *,
    cache: bool = False,
) -> LogFormat:
    """Returns the format chosen (console on a terminal, else JSON) after configuring
    structlog to write lines of ``level`` and worse to ``stream`` (stderr).

    With ``cache`` each logger keeps the configuration it met on first use, which
    spares the server's busy paths a lookup per line: for processes configured once
    for good. Without it a logger follows a later configuration (the arena's workers,
    a test capturing logs).
    """
    out = stream if stream is not None else sys.stderr
    chosen: LogFormat = log_format or ("console" if out.isatty() else "json")
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer()
        if chosen == "console"
        else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=cache,
    )
    return chosen


def configure_quiet() -> None:
    """Configures logging for arena workers: warnings and worse, to stderr."""
    configure(level=logging.WARNING)
