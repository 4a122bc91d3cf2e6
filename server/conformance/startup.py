"""Why a client command did not get as far as its seat, in one line.

A client that fails at start-up usually says why once, near the top of a long
trace (Node.js prints ``Error: Cannot find module '@grpc/grpc-js'`` above a dozen
stack lines and its version), so the end of its stderr rarely holds the reason.
The kit keeps the first line that reads as an error for the verdict, and names the
command to run when a Node.js client's packages were never installed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

ERROR_LINE: Final = re.compile(r"\b(?:(?:[A-Z]\w*)?(?:Error|Exception)|error|fatal|panic)\b:\s*\S")
"""A line that states an error: ``Error: ...``, ``ModuleNotFoundError: ...``,
``prog: error: ...``, ``fatal: ...``, ``panic: ...``."""

MISSING_MODULE: Final = "Cannot find module"
SCRIPT_SUFFIXES: Final = (".js", ".mjs", ".cjs", ".ts")


def is_error_line(line: str) -> bool:
    """Returns whether a line of a client's stderr states an error."""
    return ERROR_LINE.search(line) is not None


def uninstalled_packages(argv: Sequence[str], cwd: Path | None = None) -> Path | None:
    """Returns the directory of the package.json that serves a script in ``argv`` when
    it has no node_modules beside it (its packages were never installed), else None."""
    base = cwd or Path.cwd()
    for arg in argv:
        if not arg.endswith(SCRIPT_SUFFIXES):
            continue
        script = (base / arg).resolve()
        if not script.is_file():
            continue
        for directory in script.parents:
            if (directory / "package.json").is_file():
                return None if (directory / "node_modules").is_dir() else directory
    return None


def start_failure(argv: Sequence[str], error: str | None, cwd: Path | None = None) -> str:
    """Returns what to add to "the client exited without taking its seat": the first
    error line the client printed, and the command that installs missing Node.js
    packages; empty when the client printed no error."""
    if error is None:
        return ""
    text = f": {error.strip()}"
    if MISSING_MODULE in error:
        directory = uninstalled_packages(argv, cwd)
        if directory is not None:
            base = cwd or Path.cwd()
            shown = directory.relative_to(base) if directory.is_relative_to(base) else directory
            text += f" (its packages are not installed: run npm ci --prefix {shown})"
    return text
