"""What becomes of an answer (its ``Ruling``): accepted, or refused with a reason kind.

The match returns these; the servicers map each reason kind to a gRPC status code
in one table (``server.seating.STATUS_OF``), and ``server.wire`` writes them into
``ActResult``s. The kinds, and which one wins when several apply, are those of the
contract's ``Refusal`` enum (arena.proto), in its order.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from .quoting import fitted


class Refusal(enum.Enum):
    """Why an answer was refused; the first that applies wins, in this order."""

    MALFORMED = 1  # names no decision, no choice, or no valid action
    UNKNOWN_DECISION = 2  # no decision with that id was asked in the match
    OTHER_SEAT = 3  # the decision was asked of another seat
    ALREADY_ANSWERED = 4  # closed by another accepted answer of the seat
    DEFAULTED = 5  # closed by the server's default (or the match's end)
    NO_SUCH_OPTION = 6  # an option index past the options offered
    ILLEGAL = 7  # an action the rules do not allow now (names the rule)


@dataclass(frozen=True, slots=True)
class Ruling:
    """The ruling on one answer.

    ``refusal`` is None when accepted; ``repeated`` when the answer repeated the
    accepted answer of a decision no longer open (nothing applied this time);
    ``message`` says why a refusal happened and begins with its kind's name;
    ``rule`` names the rule an illegal action breaks.
    """

    refusal: Refusal | None = None
    message: str = ""
    rule: str | None = None
    repeated: bool = False

    @property
    def accepted(self) -> bool:
        """Whether the answer was accepted (now, or earlier for a repeat)."""
        return self.refusal is None


ACCEPTED: Final = Ruling()
REPEATED: Final = Ruling(repeated=True)


def refused(kind: Refusal, why: str, rule: str | None = None) -> Ruling:
    """Returns a refusal whose message begins with the contract's name of ``kind``."""
    return Ruling(kind, fitted(f"REFUSAL_{kind.name}: {why}"), rule)
