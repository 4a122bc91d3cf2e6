"""Structured logging: configured once by the entry point, used everywhere else.

Modules do ``log = structlog.get_logger()``; per-call context (match, seat,
decision ids) is bound with ``structlog.contextvars`` so every line of a call
carries it. On a terminal the lines are human-readable, otherwise JSON.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import structlog

LogFormat = Literal["console", "json"]


def configure(
    log_format: LogFormat | None = None, level: int = logging.INFO, stream: TextIO | None = None
) -> LogFormat:
    """Returns the format chosen after configuring structlog (console on a TTY, else JSON)."""
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
        cache_logger_on_first_use=True,
    )
    return chosen
