"""Secrets and ids: seat tokens, organiser keys, match ids.

Seat tokens, place tokens (``server.places``) and organiser keys carry 192 random
bits from ``secrets``, written in hex so that they never begin with a dash a command
line would take for an option;
match ids are random too, so that one match's id says nothing about another's.
"""

from __future__ import annotations

import hmac
import secrets

TOKEN_BYTES = 24


def new_token() -> str:
    """Returns a fresh seat or place token (192 random bits, 48 hex digits)."""
    return secrets.token_hex(TOKEN_BYTES)


def new_organiser_key() -> str:
    """Returns a fresh organiser key (192 random bits, 48 hex digits)."""
    return secrets.token_hex(TOKEN_BYTES)


def new_match_id() -> str:
    """Returns a fresh match id, e.g. ``m-3f9c2a7d1b44``."""
    return "m-" + secrets.token_hex(6)


def same_secret(given: str, expected: str) -> bool:
    """Returns whether two secrets are equal, in time independent of where they differ."""
    return hmac.compare_digest(given.encode(), expected.encode())
