"""The deal as docs/fairness.md ("How a seed deals") writes it, done again here from
the text alone: a Mersenne Twister written out, the draws in the documented order,
the reshuffled supplies built from the documented piles (R-SETUP-8, R-NEXT-2).

Nothing here calls the engine's dealing or shuffling; the engine only plays the
games whose deal and reshuffles are compared with what this procedure gives, so a
client in another language can follow the same text and verify a deal.
"""

from __future__ import annotations

import random

import pytest

from mammamia import COLOURS, INGREDIENTS, MAMMA_MIA, ORDERS, Action, State, Turn, new_game
from mammamia.fairness import game_seed

N = 624
MASK = 0xFFFFFFFF


class MersenneTwister:
    """MT19937, seeded from an integer as Python's ``random.Random(seed)`` seeds it:
    ``init_by_array`` with the seed's 32-bit words, least significant first."""

    def __init__(self, seed: int) -> None:
        key = []
        n = seed
        while True:
            key.append(n & MASK)
            n >>= 32
            if not n:
                break
        mt = [0] * N
        mt[0] = 19650218
        for i in range(1, N):
            mt[i] = (1812433253 * (mt[i - 1] ^ (mt[i - 1] >> 30)) + i) & MASK
        i, j = 1, 0
        for _ in range(max(N, len(key))):
            mt[i] = ((mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525)) + key[j] + j) & MASK
            i, j = i + 1, j + 1
            if i >= N:
                mt[0], i = mt[N - 1], 1
            if j >= len(key):
                j = 0
        for _ in range(N - 1):
            mt[i] = ((mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941)) - i) & MASK
            i += 1
            if i >= N:
                mt[0], i = mt[N - 1], 1
        mt[0] = 0x80000000
        self.mt = mt
        self.index = N

    def next32(self) -> int:
        """Returns the generator's next 32-bit output."""
        mt = self.mt
        if self.index >= N:
            for k in range(N):
                y = (mt[k] & 0x80000000) | (mt[(k + 1) % N] & 0x7FFFFFFF)
                mt[k] = mt[(k + 397) % N] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
            self.index = 0
        y = mt[self.index]
        self.index += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        return y ^ (y >> 18)

    def below(self, n: int) -> int:
        """Returns a draw in 0..n-1: the top k bits of an output, k the bit length of
        n, drawn again until below n."""
        k = n.bit_length()
        while True:
            r = self.next32() >> (32 - k)
            if r < n:
                return r

    def shuffle(self, cards: list[str]) -> None:
        """Shuffles ``cards``: for i from the last index down to 1, swap card i with
        card below(i + 1)."""
        for i in range(len(cards) - 1, 0, -1):
            j = self.below(i + 1)
            cards[i], cards[j] = cards[j], cards[i]


COPIES_IN_PLAY = {2: 8, 3: 10, 4: 12, 5: 13}
"""Cards of each ingredient kind in play by player count (R-SETUP-2: 13 less 5, 3, 1, 0)."""


def orders_in_canonical_order(colour: str) -> list[str]:
    """Returns a colour's eight orders: ``<colour>-<ingredient>`` for the four other
    ingredients in canonical order, then mixed, bombastica, minimale, monotoni."""
    personal = INGREDIENTS[COLOURS.index(colour)]
    return [
        *(f"{colour}-{kind}" for kind in INGREDIENTS if kind != personal),
        *(f"{colour}-{x}" for x in ("mixed", "bombastica", "minimale", "monotoni")),
    ]


def deal(seed: int, players: int) -> tuple[MersenneTwister, dict[str, list[list[str]]], int]:
    """Returns the generator after the deal, the deal (hands, supply and waiters, top
    card first) and the first player, as docs/fairness.md deals them."""
    rng = MersenneTwister(seed)
    deck = [kind for kind in INGREDIENTS for _ in range(COPIES_IN_PLAY[players])]
    rng.shuffle(deck)
    hands = [deck[6 * s : 6 * s + 6] for s in range(players)]
    supply = [*deck[6 * players :], MAMMA_MIA]
    rng.shuffle(supply)
    waiters = []
    for colour in COLOURS[:players]:
        waiter = orders_in_canonical_order(colour)
        rng.shuffle(waiter)
        waiters.append(waiter)
    first = rng.below(players)
    return rng, {"hands": hands, "supply": [supply], "waiters": waiters}, first


def baked_cards(order: str, from_table: tuple[int, ...], hand: tuple[int, ...] | None) -> list[str]:
    """Returns a bake's cards in the order they go onto the used pile: kind by kind,
    the owner's personal ingredient first (a Bombastica and a mixed order: none
    first), then the other kinds in canonical order."""
    card = ORDERS[order]
    first = [] if card.kind == "bombastica" or order.endswith("-mixed") else [card.personal]
    kinds = [*first, *(k for k in range(5) if k not in first)]
    extra = hand or (0, 0, 0, 0, 0)
    return [INGREDIENTS[k] for k in kinds for _ in range(from_table[k] + extra[k])]


SEEDS = [0, 1, 7, 2**32 - 1, 2**32 + 5, 2**63 - 1, game_seed("ab" * 32, ["", "seat-1"])]


@pytest.mark.parametrize("players", [2, 3, 4, 5])
@pytest.mark.parametrize("seed", SEEDS)
def test_R_SETUP_8_a_seed_deals_as_the_text_says(players: int, seed: int) -> None:
    _, dealt, first = deal(seed, players)
    game = new_game(players, seed)
    assert game.deal == {
        "hands": dealt["hands"],
        "supply": dealt["supply"][0],
        "waiters": dealt["waiters"],
    }
    assert game.to_act == first


def hoarding(actions: tuple[Action, ...]) -> Action:
    """Returns the turn that keeps the most orders in hand (no order played, a refill
    from the waiter, the most ingredient cards played): seats that all play so end a
    round in a stalemate, with cards left in the supply (R-TURN-8)."""
    return max(
        actions,
        key=lambda a: (
            (a.order is None, a.draw != "supply", a.count)
            if isinstance(a, Turn)
            else (False, False, 0)
        ),
    )


def played(players: int, seed: int, random_turns: int | None) -> State:
    """Returns a game played to its end on ``seed``: every decision random, or the
    first ``random_turns`` of each round random and the rest :func:`hoarding`."""
    chooser = random.Random(seed)
    game = new_game(players, seed)
    round_, taken = 1, 0
    while not game.is_over:
        if game.round != round_:
            round_, taken = game.round, 0
        taken += 1
        actions = game.legal_actions()
        if random_turns is None or taken <= random_turns:
            game.apply(chooser.choice(actions))
        else:
            game.apply(hoarding(actions))
    return game


GAMES = [
    *((players, seed, None) for players in (2, 3, 4, 5) for seed in (3, 11, 2**40 + 9)),
    (2, 11, 6),  # round 2 ends in a stalemate after two bakes
    (3, 0, 0),  # every round ends in a stalemate, the supply carried over
]


@pytest.mark.parametrize(("players", "seed", "random_turns"), GAMES)
def test_R_NEXT_2_reshuffles_follow_from_the_piles_as_the_text_says(
    players: int, seed: int, random_turns: int | None
) -> None:
    game = played(players, seed, random_turns)
    assert len(game.reshuffles) == 2

    # Follow the game's events as a client follows the public ones: the supply loses
    # its top cards to each refill from it (the Mamma Mia! card among them), the
    # used pile takes each bake's cards, and a new round's supply is shuffled from
    # the used pile, what is left of the supply and the Mamma Mia! card if held.
    rng, dealt, _ = deal(seed, players)
    supply, used, held, shuffled = dealt["supply"][0], [], False, []
    for event in game.events:
        if event[0] == "turn" and event[5] == "supply":
            taken = event[6] + event[7]
            held = held or event[7]
            supply = supply[taken:]
        elif event[0] == "bake":
            used += baked_cards(event[2], event[6], event[4])
        elif event[0] == "round" and event[1] > 1:
            supply = [*used, *supply, *([MAMMA_MIA] if held else [])]
            rng.shuffle(supply)
            shuffled.append(supply)
            used, held = [], False
    assert shuffled == game.reshuffles
