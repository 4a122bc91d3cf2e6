"""The errors of the rules package.

MammaMiaError (ValueError)
├── IllegalActionError   an action the rules do not allow now; cites the rule id
└── RecordError          a game record that cannot be read or replayed
"""

from __future__ import annotations


class MammaMiaError(ValueError):
    """Base class of every error the rules package raises."""


class IllegalActionError(MammaMiaError):
    """An action that breaks a rule; ``rule`` holds the rule id (e.g. ``R-TURN-1``)."""

    def __init__(self, message: str, rule: str | None = None) -> None:
        self.rule = rule
        super().__init__(f"{message} ({rule})" if rule else message)


class RecordError(MammaMiaError):
    """A game record that is malformed or does not replay; ``rule`` when a rule is broken."""

    def __init__(self, message: str, rule: str | None = None) -> None:
        self.rule = rule
        super().__init__(message)
