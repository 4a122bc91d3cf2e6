"""The finals: who plays, who sits with whom each round, the final table, and when to stop.

Pure: no I/O, no clock. The competition (its phases, storage and service) calls these
functions; the bundle's verifier calls the same ones to recompute the final table
from the records alone, so the table a server publishes and the one a verifier
computes come from one piece of code.

- **The field** (:func:`field`): the top K of the ladder's standings at the freeze,
  in their order, or the list the organiser gives.
- **Rounds** (:func:`next_round`): each round partitions the field into tables of
  one size, and each table plays one deal as a duplicate set (one match per rotation
  of its seats, docs/ladder.md), so a finalist at a table of N plays N matches, one
  in each seat. A field no larger than the most players a match allows is one table
  every round. A larger field is cut into tables of the size, among the allowed
  table sizes, that leaves the fewest finalists out (then the largest); the
  finalists left out sit the round out (a **bye**). Byes go to those with the fewest
  byes so far, so after every *cycle* of rounds every finalist has sat out equally
  often, and has played as many matches and each seat as often as every other
  (:func:`balanced`). Who sits with whom varies from round to round: of several
  seeded draws, the one whose tables repeat the fewest earlier meetings is taken.
  Everything is deterministic from the seed and the rounds already played.
- **The final table** (:func:`final_table`): ratings afresh (every finalist starts at
  the model's initial rating) from the finals' results alone, in the order played
  (``ratings.replay``); each line with its interval, the probability it is better
  than the next line's finalist (``confidence.py``), and its head-to-head record
  against that finalist: the duplicate sets it won and lost against it, and the
  evidence they give that it is the better of the two (:func:`evidence`).
- **Stopping** (:func:`stop`): after a balanced round, the finals stop when the top M
  are *settled* (:func:`settled`); after any round, when another round would spend
  more than the match budget.

Why the head-to-head evidence decides, and not the ratings' ``p_better``: the rule
looks after every round, and a probability that is right at one look is crossed by
chance sooner or later over many; two equal finalists would be declared ordered in
most long finals. The evidence is a test martingale (a Bayes factor against "the
two are equal", :func:`evidence`): for two equal finalists, the chance that it
*ever* reaches ``1 / (1 - confidence)``, however many rounds are looked at, is at
most ``1 - confidence`` (Ville's inequality). So a ``settled`` stop at 95% is wrong
about a pair at most 5% of the time, looks included.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import factorial
from typing import Literal

from ..ladder.confidence import interval, p_better
from ..ladder.ratings import Rating, Result, initial, replay

#: The confidence each adjacent pair of the top M must reach (95%).
CONFIDENCE = 0.95

#: How many seeded draws of a round's tables are compared (fewest repeated meetings wins).
DRAWS = 32

#: The largest evidence a line shows (beyond it the float would overflow; the rule
#: compares against far smaller bounds).
EVIDENCE_SHOWN = 1e300


def field(
    standings: Sequence[str], top_k: int, chosen: Sequence[str] | None = None
) -> tuple[str, ...]:
    """Returns the finals' field: ``chosen`` when the organiser gives a list, else the
    first ``top_k`` names of ``standings`` (best first, ties already broken as the
    standings break them).

    Raises ValueError for a field of fewer than two finalists, a name listed twice, or
    a ``top_k`` larger than the standings.
    """
    if chosen is not None:
        names = tuple(chosen)
    else:
        if top_k > len(standings):
            raise ValueError(
                f"finals of the top {top_k}: the ladder has only {len(standings)} bots"
            )
        names = tuple(standings[:top_k])
    if len(names) < 2:
        raise ValueError(f"finals of {len(names)} finalist(s): need at least 2")
    twice = sorted(n for n, k in Counter(names).items() if k > 1)
    if twice:
        raise ValueError(f"finals field names {', '.join(twice)} more than once")
    return names


@dataclass(frozen=True, slots=True)
class Table:
    """One table of a round: the finalists in the seat order of the set's first match.

    The table plays one deal once per rotation of its seats: the finalist at seat *s*
    of the first match sits at seat *(s + k) mod N* of match *k*
    (:func:`rotations`).
    """

    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Round:
    """One round of the finals: its index (from 0), its tables and its byes."""

    index: int
    tables: tuple[Table, ...]
    byes: tuple[str, ...] = ()

    @property
    def matches(self) -> int:
        """Returns the matches the round plays: one per seat of every table."""
        return sum(len(t.names) for t in self.tables)


def rotations(table: Table) -> list[tuple[str, ...]]:
    """Returns the seat orders of the table's matches, one per rotation, in play order
    (the ladder's duplicate sets: the names move one seat on from match to match)."""
    names = table.names
    n = len(names)
    return [tuple(names[(s - k) % n] for s in range(n)) for k in range(n)]


def table_size(finalists: int, sizes: Sequence[int]) -> int:
    """Returns the size of every table of a round for ``finalists`` and the allowed
    table sizes ``sizes`` (players per match): the whole field when it is no larger
    than the largest size (and no smaller than the smallest), else the size that
    leaves the fewest byes, then the largest.

    Raises ValueError for no sizes, a size outside 2-5 (R-SETUP-1), or a field of
    fewer finalists than the smallest size.
    """
    if not sizes or not all(2 <= s <= 5 for s in sizes):
        raise ValueError(f"finals table sizes {list(sizes)}: each from 2 to 5 (R-SETUP-1)")
    low, high = min(sizes), max(sizes)
    if finalists < low:
        raise ValueError(f"finals of {finalists} finalists: a table needs at least {low}")
    if finalists <= high:
        return finalists
    return min(sorted(set(sizes)), key=lambda s: (finalists % s, -s))


def next_round(
    finalists: Sequence[str],
    sizes: Sequence[int],
    played: Sequence[Round],
    seed: int | str,
) -> Round:
    """Returns the next round's tables for the field ``finalists`` after the rounds
    ``played`` (in order), with the allowed table sizes ``sizes`` (players per match).

    Deterministic from ``seed``, the field and ``played``. Raises ValueError as
    :func:`table_size` does.
    """
    size = table_size(len(finalists), sizes)
    index = len(played)
    rng = random.Random(f"mammamia-finals/{seed}/{index}")
    byes_so_far = Counter(name for r in played for name in r.byes)
    met = _meetings(played)
    order = list(finalists)
    rng.shuffle(order)
    # The fewest byes so far sit out; among equals, the seeded order decides.
    spare = len(order) % size
    by_byes = sorted(order, key=lambda n: byes_so_far[n])
    byes = tuple(sorted(by_byes[:spare], key=order.index))
    seated = [n for n in order if n not in byes]
    best: tuple[int, list[Table]] | None = None
    for _ in range(DRAWS):
        rng.shuffle(seated)
        tables = [Table(tuple(seated[i : i + size])) for i in range(0, len(seated), size)]
        repeats = sum(met[pair] ** 2 for t in tables for pair in _pairs(t.names))
        if best is None or repeats < best[0]:
            best = (repeats, tables)
        if repeats == 0:
            break
    assert best is not None  # DRAWS >= 1
    return Round(index, tuple(best[1]), byes)


def _pairs(names: Sequence[str]) -> Iterable[tuple[str, str]]:
    ordered = sorted(names)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            yield a, b


def _meetings(played: Sequence[Round]) -> Counter[tuple[str, str]]:
    met: Counter[tuple[str, str]] = Counter()
    for r in played:
        for t in r.tables:
            met.update(_pairs(t.names))
    return met


def balanced(finalists: Sequence[str], played: Sequence[Round]) -> bool:
    """Returns whether, after ``played``, every finalist has played as many matches as
    every other (and so each seat as often: each table plays every rotation)."""
    matches = Counter[str]({n: 0 for n in finalists})
    for r in played:
        for t in r.tables:
            matches.update({n: len(t.names) for n in t.names})
    return len(set(matches.values())) <= 1


@dataclass(frozen=True, slots=True)
class Played:
    """One finished finals match as the final table sees it: names and ranks in seat
    order (1 best, ties share, R-END-2), the names of finalists who were absent
    (their seat played by the default policy; the result counts for them), and its
    duplicate set's id (empty: a set of its own)."""

    names: tuple[str, ...]
    ranks: tuple[int, ...]
    absent: tuple[str, ...] = ()
    set_id: str = ""


@dataclass(frozen=True, slots=True)
class Line:
    """One finalist's line of the final table.

    ``rank`` is its place (1 best); ``low`` and ``high`` bound its interval
    (``mu ± 2 sigma``); ``p_better`` is the ratings' probability that it is better
    than the next line's finalist (None for the last line); ``matches``, ``wins``
    (matches it ranked first in, shared firsts included) and ``absent`` (matches it
    was absent from) count its finals matches. ``sets_won`` and ``sets_lost`` are
    the duplicate sets it finished ahead of and behind the next line's finalist
    (:func:`head_to_head`), and ``evidence`` what they say for its place above it
    (:func:`evidence`; None when the sets say the next finalist is the better, and
    for the last line).
    """

    rank: int
    name: str
    mu: float
    sigma: float
    low: float
    high: float
    p_better: float | None
    matches: int
    wins: int
    absent: int
    sets_won: int = 0
    sets_lost: int = 0
    evidence: float | None = None


@dataclass(frozen=True, slots=True)
class FinalTable:
    """The finals' table: one :class:`Line` per finalist, best first, the number of
    matches it was computed from, and whether every finalist was dealt as many
    matches as every other (``balanced``: those played, and those cut off)."""

    lines: tuple[Line, ...]
    matches: int
    balanced: bool


def final_table(
    finalists: Sequence[str], results: Iterable[Played], cut: Iterable[Sequence[str]] = ()
) -> FinalTable:
    """Returns the final table of ``finalists`` from the finals' ``results`` alone, in
    the order played: ratings afresh, ordered by the conservative rating
    ``mu - 3 sigma`` (as the ladder's standings), equal ratings in the field's order.

    ``cut`` names the seats of the matches that were cut off (aborted by a restart or
    a takeover): they count for nothing but the table's balance, for their finalists
    were dealt them as the others were.

    Raises ValueError for a result naming someone outside the field.
    """
    known = set(finalists)
    results = list(results)
    dealt = Counter[str]({n: 0 for n in finalists})
    for names in cut:
        dealt.update(names)
    matches = Counter[str]()
    wins = Counter[str]()
    absent = Counter[str]()
    for result in results:
        strangers = sorted(set(result.names) - known)
        if strangers:
            raise ValueError(f"a finals result names {', '.join(strangers)}, not in the field")
        matches.update(result.names)
        wins.update(n for n, k in zip(result.names, result.ranks, strict=True) if k == 1)
        absent.update(result.absent)
    rated = replay(Result(r.names, r.ranks) for r in results)
    ratings = {n: rated.get(n, initial()) for n in finalists}
    place = {n: i for i, n in enumerate(finalists)}
    order = sorted(finalists, key=lambda n: (-ratings[n].conservative, place[n]))
    lines = []
    for i, name in enumerate(order):
        rating = ratings[name]
        low, high = interval(rating)
        below: Rating | None = ratings[order[i + 1]] if i + 1 < len(order) else None
        won, lost = head_to_head(results, name, order[i + 1]) if below else (0, 0)
        lines.append(
            Line(
                rank=i + 1,
                name=name,
                mu=rating.mu,
                sigma=rating.sigma,
                low=low,
                high=high,
                p_better=None if below is None else p_better(rating, below),
                matches=matches[name],
                wins=wins[name],
                absent=absent[name],
                sets_won=won,
                sets_lost=lost,
                evidence=None if below is None or won < lost else _shown(evidence(won, lost)),
            )
        )
    dealt.update(matches)
    return FinalTable(tuple(lines), len(results), len(set(dealt.values())) <= 1)


def head_to_head(results: Sequence[Played], a: str, b: str) -> tuple[int, int]:
    """Returns ``(won, lost)``: the duplicate sets in which ``a``'s ranks, summed over
    the set's matches that both played, were better (lower) than ``b``'s, and worse.

    A set is one deal played from every rotation of its seats, so its sum is fair to
    both seats; sets they tie, or did not both sit at, count for neither. Matches
    without a set id are each a set of their own.
    """
    sums: dict[str, list[int]] = {}
    for i, result in enumerate(results):
        if a in result.names and b in result.names:
            both = sums.setdefault(result.set_id or f"#{i}", [0, 0])
            both[0] += result.ranks[result.names.index(a)]
            both[1] += result.ranks[result.names.index(b)]
    won = sum(1 for mine, theirs in sums.values() if mine < theirs)
    lost = sum(1 for mine, theirs in sums.values() if mine > theirs)
    return won, lost


def evidence(won: int, lost: int) -> Fraction:
    """Returns the evidence, exactly, that of two finalists the one that ``won`` of
    their ``won + lost`` decided sets is the better: the Bayes factor of "it wins a
    set with some chance p, any p from 0 to 1 alike" against "p is 1/2" (equal):
    ``2^n won! lost! / (n + 1)!`` for ``n = won + lost``.

    1 before any set; 2^n / (n + 1) after n sets won in a row. Under "equal" it is a
    test martingale, so the chance it ever reaches 1/alpha is at most alpha (Ville's
    inequality), however often it is looked at. Raises ValueError for a negative count.
    """
    if won < 0 or lost < 0:
        raise ValueError(f"sets won {won} and lost {lost}: neither can be negative")
    n = won + lost
    return Fraction(2**n * factorial(won) * factorial(lost), factorial(n + 1))


def _shown(value: Fraction) -> float:
    return EVIDENCE_SHOWN if value >= EVIDENCE_SHOWN else float(value)


def settled(table: FinalTable, top_m: int, confidence: float = CONFIDENCE) -> bool:
    """Returns whether the top ``top_m`` places of ``table`` are ordered with at least
    ``confidence``: every line of the top M has won more duplicate sets than it lost
    against the line below it, with evidence of at least ``1 / (1 - confidence)``
    (:func:`evidence`; so the M-th is also sure against the (M+1)-th, when there is
    one). For two equal finalists the chance of ever being called ordered is then
    at most ``1 - confidence``.

    Raises ValueError for ``top_m`` below 1 or a confidence outside (0, 1).
    """
    if top_m < 1:
        raise ValueError(f"finals top {top_m}: need at least 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"finals confidence {confidence}: need more than 0 and less than 1")
    needed = 1.0 / (1.0 - confidence)
    return all(
        line is table.lines[-1] or (line.evidence is not None and line.evidence >= needed)
        for line in table.lines[:top_m]
    )


@dataclass(frozen=True, slots=True)
class Stop:
    """Why the finals stopped: ``settled`` (the top M are ordered) or ``budget`` (the
    match budget is spent), after ``matches`` matches."""

    reason: Literal["settled", "budget"]
    matches: int


def round_matches(finalists: int, sizes: Sequence[int]) -> int:
    """Returns how many matches every round of a field of ``finalists`` plays: one per
    seated finalist (the byes play none). Raises ValueError as :func:`table_size`."""
    size = table_size(finalists, sizes)
    return finalists - finalists % size


def stop(
    table: FinalTable, top_m: int, confidence: float, budget: int, next_matches: int = 1
) -> Stop | None:
    """Returns why the finals stop now, or None to play another round.

    ``settled`` when ``table`` is balanced (every finalist has played as many
    matches) and :func:`settled` holds; else ``budget`` when the next round, of
    ``next_matches`` matches (:func:`round_matches`; by default 1: stop once the
    budget is reached), would take ``table.matches`` past ``budget``, so the budget
    is never overrun (with byes, the last cycle may then be left unbalanced). None
    before any match. Raises ValueError as :func:`settled` does.
    """
    if table.matches == 0:
        return None
    if table.balanced and settled(table, top_m, confidence):
        return Stop("settled", table.matches)
    if table.matches + next_matches > budget:
        return Stop("budget", table.matches)
    return None
