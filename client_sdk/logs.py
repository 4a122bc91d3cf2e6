"""Structured logging for the bot commands, configured once by the entry point.

Logs go to stderr (stdout is kept for results such as ``arena --json``): lines a
person can read on a terminal, JSON otherwise.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog

LogFormat = Literal["console", "json"]


def configure(log_format: LogFormat | None = None, level: int = logging.INFO) -> LogFormat:
    """Returns the format chosen after configuring structlog to write to stderr."""
    chosen: LogFormat = log_format or ("console" if sys.stderr.isatty() else "json")
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
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
    return chosen


def configure_quiet() -> None:
    """Configures logging for arena workers: warnings and worse, to stderr."""
    configure(level=logging.WARNING)
