"""Operators: the people who run a server, each a name with a key.

The server's organiser key is the operator ``organiser``. ``mammamia serve
--operators FILE`` names more: a TOML file of operator names and the hashes of
their keys, written by ``mammamia admin operators add NAME --file FILE`` (which
prints the new key once; the file keeps only its hash)::

    [operators]
    alice = "sha256:9f86d0..."

A key arrives as the ``organiser-key`` metadata of a call, as the organiser key
always has; :meth:`Operators.resolve` is the one place it becomes a name. Keys are
192 random bits (``server.tokens``), so one SHA-256 of the key is as safe to keep as
the ladder's hashed bot keys are: there is no short password to guess by trying.
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from .tokens import new_organiser_key, same_secret

#: The operator whose key is the server's organiser key.
ORGANISER: Final = "organiser"
#: The name the server's own changes are audited under (never an operator's).
SERVER: Final = "server"
#: How a stored key hash begins (the hash's kind, so another may follow).
HASH_PREFIX: Final = "sha256:"
NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9._-]{1,32}")
RESERVED: Final = (ORGANISER, SERVER)


class OperatorsError(ValueError):
    """An operators file that cannot be read or written (the message says why)."""


def key_hash(key: str) -> str:
    """Returns what an operators file keeps of ``key``: ``sha256:`` and its hex digest."""
    return HASH_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()


def check_name(name: str) -> str:
    """Returns ``name``; raises OperatorsError unless it is 1 to 32 of [A-Za-z0-9._-]
    and not a name the server keeps for itself (organiser, server)."""
    if not NAME_PATTERN.fullmatch(name):
        raise OperatorsError(
            f"operator name {name!r} must be 1 to 32 letters, digits, '-', '_' or '.'"
        )
    if name in RESERVED:
        raise OperatorsError(f"operator name {name!r} is the server's own")
    return name


@dataclass(frozen=True)
class Operators:
    """The server's operators: the organiser (by its key) and those of a file (by
    their keys' hashes)."""

    organiser_key: str
    #: Each named operator's key hash, by name.
    hashes: Mapping[str, str] = field(default_factory=dict)

    def resolve(self, key: str) -> str | None:
        """Returns the name of the operator whose key is ``key``, or None when none is."""
        if not key:
            return None
        if self.organiser_key and same_secret(key, self.organiser_key):
            return ORGANISER
        hashed = key_hash(key)
        found = None
        for name, known in self.hashes.items():
            # Every hash compared, in time independent of where they differ.
            if same_secret(hashed, known):
                found = name
        return found


def load(path: str | Path) -> dict[str, str]:
    """Returns the key hash of each operator of the file at ``path``; raises
    OperatorsError when it cannot be read or is not an operators file."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise OperatorsError(f"{path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise OperatorsError(f"{path}: not TOML: {e}") from None
    table = data.get("operators", {})
    if not isinstance(table, dict) or set(data) - {"operators"}:
        raise OperatorsError(f"{path}: holds one table, [operators] (name = key hash)")
    hashes: dict[str, str] = {}
    for name, hashed in table.items():
        check_name(name)
        if not (isinstance(hashed, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", hashed)):
            raise OperatorsError(f"{path}: operator {name!r}: the key hash is not sha256:HEX")
        hashes[name] = hashed
    return hashes


def add(path: str | Path, name: str) -> str:
    """Adds operator ``name`` to the file at ``path`` (created when missing) and
    returns its new key (the file keeps only its hash); raises OperatorsError for a
    bad or taken name, or a file that cannot be read or written."""
    check_name(name)
    hashes = load(path) if os.path.exists(path) else {}
    if name in hashes:
        raise OperatorsError(f"{path}: operator {name!r} exists already")
    key = new_organiser_key()
    hashes[name] = key_hash(key)
    lines = [
        "# The operators of a mammamia server (mammamia serve --operators FILE):",
        "# each name and the SHA-256 of its key. Add one with",
        "# `mammamia admin operators add NAME --file FILE`.",
        "[operators]",
        *(f'"{n}" = "{h}"' for n, h in sorted(hashes.items())),
    ]
    tmp = f"{path}.tmp"
    try:
        # Written whole, then moved over: a reader never sees half a file.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, path)
    except OSError as e:
        raise OperatorsError(f"{path}: {e.strerror}") from None
    return key
