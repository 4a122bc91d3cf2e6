"""The errors of the Rules service, each mapped to one gRPC status by the servicer.

RulesServiceError (ValueError)
├── BadRequest        INVALID_ARGUMENT: a request that names nothing valid, an
│                     illegal action (with its rule id), a record that does not
│                     replay, a view that cannot be sampled from
├── UnknownHandle     NOT_FOUND: a handle never given out, or released
└── TooManyStates     RESOURCE_EXHAUSTED: the bound on states held is reached
"""

from __future__ import annotations


class RulesServiceError(ValueError):
    """Base class of the errors a Rules call answers with a status."""


class BadRequest(RulesServiceError):
    """A request the rules cannot carry out; the message names the field or rule."""


class UnknownHandle(RulesServiceError):
    """A handle the service does not hold."""


class TooManyStates(RulesServiceError):
    """A call that would hold more states than the service's bound."""
