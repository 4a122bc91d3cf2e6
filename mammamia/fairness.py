"""Verifiable deals: a match's seed committed to before anyone joins, mixed with the
seats' own entropy, revealed at the end, and checked against the record.

The scheme (``mammamia-seed/1``, docs/fairness.md):

1. At creation the server draws a **server seed**, 32 random bytes written as 64
   lowercase hex digits, and publishes its **commitment**: the SHA-256, in hex, of
   the UTF-8 text ``"mammamia-commitment/1\\n" + match_id + "\\n" + server_seed``.
2. Each seat may give a **client seed** when it joins, before the match starts: any
   text of at most CLIENT_SEED_LIMIT characters (none is the empty text).
3. When the match starts, the **game seed** is the first 8 bytes, big-endian, of
   the SHA-256 of ``"mammamia-seed/1\\n" + server_seed + "\\n" + client_seed_0 +
   "\\n" + ... + client_seed_last`` (one per seat, in seat order), shifted right by
   one bit (so it is below 2**63). The game is dealt from it (R-SETUP-8): the
   opening, the first player when the organiser did not choose one, and the
   reshuffles of rounds 2 and 3.
4. At the end, the match's end and its record reveal the server seed and the
   client seeds (the record's ``meta.fairness``).

A match whose seed the organiser chose plays that seed: its commitment is over the
seed in decimal, as the server seed, and client seeds are not mixed in (a chosen
seed is for replaying a known deal).

A ladder **duplicate set** (:class:`DealSet`) plays one deal once per rotation of the
seats. Its matches share one server seed and one commitment, over the set's id in
place of the match id; client seeds are not mixed in (they would change the deal
from one match of the set to the next), so every match of the set has the game seed
of the server seed with empty client seeds. The record of every match but the set's
last is **sealed** (no seed, deal, reshuffles or server seed: the later matches deal
the same cards) until the set ends; then :func:`unseal` completes it.

:func:`verify` checks a record against all this.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from .errors import RecordError
from .record import Record, parse, record_of

SCHEME: Final = "mammamia-seed/1"
CLIENT_SEED_LIMIT: Final = 64
SERVER: Final = "server"  # the server drew the seed
ORGANISER: Final = "organiser"  # the organiser chose it


def new_server_seed() -> str:
    """Returns a fresh server seed: 32 random bytes as 64 hex digits."""
    return secrets.token_hex(32)


def commitment(match_id: str, server_seed: str) -> str:
    """Returns the hex SHA-256 commitment to ``server_seed`` for match ``match_id``."""
    text = f"mammamia-commitment/1\n{match_id}\n{server_seed}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def game_seed(server_seed: str, client_seeds: Sequence[str]) -> int:
    """Returns the game seed (0 to 2**63 - 1) derived from the server seed and each
    seat's client seed, in seat order ("" for a seat that gave none)."""
    text = "\n".join((SCHEME, server_seed, *client_seeds))
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def check_client_seed(text: str) -> str:
    """Returns ``text``; raises ValueError when it is longer than CLIENT_SEED_LIMIT."""
    if len(text) > CLIENT_SEED_LIMIT:
        raise ValueError(f"client_seed: at most {CLIENT_SEED_LIMIT} characters, got {len(text)}")
    return text


@dataclass(frozen=True, slots=True)
class DealSet:
    """A match's place in a duplicate set: match ``index`` (0 first) of ``size``, in
    the set ``set_id``; its seats are the first match's rotated by ``index``."""

    set_id: str
    index: int
    size: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.size:
            raise ValueError(
                f"deal set {self.set_id!r}: index {self.index} is not below its size {self.size}"
            )

    @property
    def is_last(self) -> bool:
        """Returns whether this is the set's last match (whose end reveals the seed)."""
        return self.index == self.size - 1

    def meta(self) -> dict[str, Any]:
        """Returns the set as the record's ``meta.fairness.set`` shows it."""
        return {"id": self.set_id, "index": self.index, "size": self.size}


def sealed_note(set_id: str) -> str:
    """Returns why a sealed record of the set ``set_id`` shows no seed."""
    return f"the seed of duplicate set {set_id!r} is revealed once the set's last match has ended"


@dataclass(slots=True)
class Fairness:
    """One match's seeds: the server seed and its commitment, and the seats' client
    seeds as they join. ``source`` is SERVER, or ORGANISER for a chosen seed."""

    match_id: str
    server_seed: str
    source: str
    client_seeds: list[str]
    first_player_drawn: bool
    deal_set: DealSet | None = None

    @classmethod
    def drawn(cls, match_id: str, players: int, first_player_drawn: bool) -> Fairness:
        """Returns the seeds of a match whose seed the server draws."""
        return cls(match_id, new_server_seed(), SERVER, [""] * players, first_player_drawn)

    @classmethod
    def chosen(cls, match_id: str, seed: int, players: int, first_player_drawn: bool) -> Fairness:
        """Returns the seeds of a match whose seed the organiser chose."""
        return cls(match_id, str(seed), ORGANISER, [""] * players, first_player_drawn)

    @classmethod
    def in_set(
        cls,
        match_id: str,
        players: int,
        first_player_drawn: bool,
        deal_set: DealSet,
        server_seed: str,
    ) -> Fairness:
        """Returns the seeds of a match of a duplicate set: the set's server seed."""
        return cls(match_id, server_seed, SERVER, [""] * players, first_player_drawn, deal_set)

    @property
    def commitment(self) -> str:
        """Returns the commitment published before anyone joins (a set's: over its id)."""
        committed = self.deal_set.set_id if self.deal_set is not None else self.match_id
        return commitment(committed, self.server_seed)

    @property
    def takes_client_seeds(self) -> bool:
        """Returns whether the seats' client seeds are mixed into the game seed: when
        the server drew the seed, for a match played alone."""
        return self.source == SERVER and self.deal_set is None

    @property
    def sealed(self) -> bool:
        """Returns whether the seed stays hidden after the match ends: a match of a
        duplicate set other than its last."""
        return self.deal_set is not None and not self.deal_set.is_last

    @property
    def seed(self) -> int:
        """Returns the game seed (with the client seeds given so far)."""
        if self.source == ORGANISER:
            return int(self.server_seed)
        if self.deal_set is not None:
            return game_seed(self.server_seed, [""] * len(self.client_seeds))
        return game_seed(self.server_seed, self.client_seeds)

    def meta(self, revealed: bool = True) -> dict[str, Any]:
        """Returns the record's ``meta.fairness``: everything :func:`verify` needs once
        ``revealed`` (the match is over) and not :attr:`sealed`; else the commitment
        (and the set) only."""
        shown: dict[str, Any] = {
            "scheme": SCHEME,
            "source": self.source,
            "commitment": self.commitment,
        }
        if self.deal_set is not None:
            shown["set"] = self.deal_set.meta()
        if not revealed:
            return shown
        if self.sealed:
            assert self.deal_set is not None
            return {
                **shown,
                "sealed": sealed_note(self.deal_set.set_id),
                "first_player_drawn": self.first_player_drawn,
            }
        return {
            **shown,
            "server_seed": self.server_seed,
            "client_seeds": list(self.client_seeds),
            "first_player_drawn": self.first_player_drawn,
        }


def is_sealed(text: str) -> bool:
    """Returns whether the record ``text`` is a duplicate set's sealed record (no seed
    or deal until its set ends)."""
    try:
        data = json.loads(text)
    except ValueError:
        return False
    fair = data.get("meta", {}).get("fairness") if isinstance(data, dict) else None
    return isinstance(fair, dict) and "sealed" in fair


def seal(data: dict[str, Any]) -> dict[str, Any]:
    """Returns the record ``data`` (JSON-ready) without what would give away a sealed
    match's deal: its seed, deal and reshuffles."""
    return {k: v for k, v in data.items() if k not in ("seed", "deal", "reshuffles")}


def unseal(text: str, server_seed: str) -> str:
    """Returns the sealed record ``text`` of a duplicate set's match completed with
    the set's ``server_seed``: the game seed, the deal and reshuffles that seed
    shuffles, and the seeds in ``meta.fairness``; a record that is not sealed is
    returned as it is.

    Raises ValueError when ``server_seed`` is not the one the commitment was made
    to, RecordError when the record is not one or does not replay on the seed's deal.
    """
    if not is_sealed(text):
        return text
    data = json.loads(text)
    fair = data["meta"]["fairness"]
    set_id = fair.get("set", {}).get("id")
    if not isinstance(set_id, str) or fair.get("commitment") != commitment(set_id, server_seed):
        raise ValueError(f"server seed for set {set_id!r}: not the one its commitment was made to")
    record = parse(data)
    seed = game_seed(server_seed, [""] * record.players)
    drawn = bool(fair.get("first_player_drawn"))
    fresh = Record(
        record.players,
        record.colours,
        seed,
        None if drawn else record.first_player,
        None,
        None,
        record.actions,
    )
    meta = dict(record.meta)
    shown = {k: v for k, v in fair.items() if k != "sealed"}
    meta["fairness"] = {
        **shown,
        "server_seed": server_seed,
        "client_seeds": [""] * record.players,
        "first_player_drawn": drawn,
    }
    return record_of(fresh.start(), record.actions, seed=seed, meta=meta).dumps()


def verify(record: Record) -> list[str]:
    """Returns what does not match in ``record``'s deal and seeds (empty when all does):
    the commitment, the game seed derived from the revealed seeds, the deal, the first
    player (when drawn) and the reshuffles the seed produces (R-SETUP-8)."""
    fair = record.meta.get("fairness")
    match_id = record.meta.get("match")
    if not isinstance(fair, dict) or not isinstance(match_id, str):
        return ["the record has no meta.fairness and meta.match to verify"]
    deal_set = fair.get("set")
    if isinstance(deal_set, dict) and "server_seed" not in fair:
        return [
            f"cannot verify yet: this is match {deal_set.get('index', 0) + 1} of "
            f"{deal_set.get('size')} of a duplicate set, and "
            f"{sealed_note(str(deal_set.get('id')))}; fetch the record again then"
        ]
    if isinstance(deal_set, dict):
        match_id = str(deal_set.get("id"))  # a set commits once, over its id
    server_seed = fair.get("server_seed")
    clients = fair.get("client_seeds")
    if (
        not isinstance(server_seed, str)
        or not isinstance(clients, list)
        or not all(isinstance(c, str) for c in clients)
    ):
        return ["meta.fairness needs server_seed (text) and client_seeds (a list of text)"]
    faults = []
    if fair.get("commitment") != commitment(match_id, server_seed):
        faults.append(
            "the commitment is not the SHA-256 of the "
            f"{'set' if isinstance(deal_set, dict) else 'match'} id and server seed"
        )
    if fair.get("source") == ORGANISER:
        expected = int(server_seed) if server_seed.isdigit() else None
    elif isinstance(deal_set, dict):
        # A set's matches all deal the same: client seeds are not mixed in.
        expected = game_seed(server_seed, [""] * record.players)
    else:
        if len(clients) != record.players:
            faults.append(f"client_seeds has {len(clients)} entries for {record.players} seats")
        expected = game_seed(server_seed, clients)
    if expected != record.seed:
        faults.append(
            f"the record's seed {record.seed} is not the seed the revealed seeds give ({expected})"
        )
        return faults
    drawn = bool(fair.get("first_player_drawn"))
    fresh = Record(
        record.players,
        record.colours,
        record.seed,
        None if drawn else record.first_player,
        None,
        None,
        record.actions,
    )
    try:
        dealt = record_of(fresh.replay(), record.actions, seed=record.seed)
    except RecordError as e:  # an action the seed's own deal does not allow
        return [*faults, f"the actions do not replay on the seed's deal: {e}"]
    if drawn and dealt.first_player != record.first_player:
        faults.append(
            f"first_player {record.first_player} is not the one the seed draws "
            f"({dealt.first_player}, R-SETUP-6)"
        )
    if record.deal is not None and dealt.deal != record.deal:
        faults.append("the deal is not the one the seed shuffles (R-SETUP-8)")
    if (record.reshuffles or []) != (dealt.reshuffles or []):
        faults.append("the reshuffles are not the ones the seed shuffles (R-SETUP-8)")
    return faults
