"""The ``mammamia`` command.

The rules package provides ``state``, ``show`` and ``play``; the server and the SDK
add their commands (``serve``, ``match``, ``bot``, ``arena``, ``ladder``, ...) through
the ``mammamia.commands`` entry-point group, so this package imports none of them.
Each entry point names a function ``register(subparsers)`` that adds its parsers and
sets ``func`` on them; it is loaded only when its command is asked for (or for help).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

from .errors import MammaMiaError, RecordError

EXIT_BAD_INPUT = 2


def _named(path: str, error: RecordError) -> RecordError:
    """Returns ``error`` with the record's file name in front, as load() puts it."""
    if str(error).startswith(f"{path}: "):
        return error
    return RecordError(f"{path}: {error}", error.rule)


def _cmd_state(args: argparse.Namespace) -> int:
    from .dump import state_dump
    from .record import load

    try:
        state = load(args.record).replay()
    except RecordError as e:
        raise _named(args.record, e) from None
    print(json.dumps(state_dump(state)))
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from .record import load
    from .show import show

    # Replay the whole record first: a record that breaks a rule prints nothing.
    try:
        lines = list(show(load(args.record)))
    except RecordError as e:
        raise _named(args.record, e) from None
    print("\n".join(lines))
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
    import random

    from .record import record_of
    from .show import show
    from .state import new_game

    state = new_game(args.players, args.seed)
    rng = random.Random(args.seed)
    actions = []
    while not state.is_over:
        seat = state.to_act
        assert seat is not None
        action = rng.choice(state.legal_actions())
        actions.append((seat, action))
        state.apply(action)
    record = record_of(state, actions, seed=args.seed)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(record.to_json(), f)
    for line in show(record):
        print(line)
    return 0


def _verify_bundle(path: str) -> int:
    """Verifies the bundle directory ``path`` with the verifier installed under the
    ``mammamia.verifiers`` entry point ``bundle`` (the server's); returns the exit
    status."""
    found = [ep for ep in entry_points(group="mammamia.verifiers") if ep.name == "bundle"]
    if not found:
        raise MammaMiaError(
            f"{path}: a directory is verified as a competition's bundle, and no bundle "
            "verifier is installed (it comes with the server, in the mammamia distribution)"
        )
    fault = found[0].load()(path)
    if fault:
        print(f"mammamia verify: {path}: {fault}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(
        f"{path}: verified bundle: every file's hash, every record's deal, replay and "
        "ranks, and the final table recomputed from the records"
    )
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    import os

    from .fairness import verify
    from .record import load, result_faults

    if os.path.isdir(args.record):
        return _verify_bundle(args.record)
    try:
        record = load(args.record)
    except RecordError as e:
        raise _named(args.record, e) from None
    faults = verify(record)
    if not faults:
        faults = result_faults(record)
    if faults:
        print(f"mammamia verify: {args.record}: {'; '.join(faults)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    fair = record.meta["fairness"]
    source = fair.get("source", "server")
    deal_set = fair.get("set")
    place = (
        f", match {deal_set.get('index', 0) + 1} of {deal_set.get('size')} of "
        f"duplicate set {deal_set.get('id')}"
        if isinstance(deal_set, dict)
        else ""
    )
    print(
        f"{args.record}: verified ({source} seed{place}): commitment, game seed, deal, "
        f"{len(record.reshuffles or [])} reshuffles" + (", ranks" if "ranks" in record.meta else "")
    )
    return 0


def _builtin(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "state",
        help="print the state after a game record (docs/record.md)",
        description="Replay RECORD and print the state dump as one JSON object. "
        "A bad record or an illegal action exits 2 with one line on stderr.",
    )
    p.add_argument("record", metavar="RECORD.json")
    p.set_defaults(func=_cmd_state)
    p = sub.add_parser(
        "show",
        help="print a game record as a human-readable log",
        description="Print the game of RECORD, one line per event.",
    )
    p.add_argument("record", metavar="RECORD.json")
    p.set_defaults(func=_cmd_show)
    p = sub.add_parser(
        "play",
        help="play a local game between random players and print it",
        description="Play one local game with every seat choosing uniformly "
        "among the legal actions, print its log, and optionally save its record.",
    )
    p.add_argument("--players", type=int, default=4, help="2 to 5 (default 4)")
    p.add_argument("--seed", type=int, default=0, help="the game's seed (default 0)")
    p.add_argument("--out", metavar="FILE", help="write the game record to FILE")
    p.set_defaults(func=_cmd_play)
    p = sub.add_parser(
        "verify",
        help="check a match record's seeds, deal and ranks, or a competition's bundle",
        description="Check that RECORD's deal is fair: its commitment is the "
        "one the server published before anyone joined, the game seed is the "
        "one the revealed server seed and client seeds give, and the deal, "
        "first player and reshuffles are exactly what that seed shuffles "
        "(docs/fairness.md), and that the ranks and scores its meta states are "
        "the ones its replay reaches (docs/record.md). Given a directory, check it "
        "as a competition's bundle (docs/competitions.md): every file's hash, every "
        "record as above, and the final table recomputed from the records; the "
        "bundle verifier comes with the server, found through the "
        "'mammamia.verifiers' entry point. Exit 0 with one line, or 2 naming the "
        "first thing that does not match.",
    )
    p.add_argument("record", metavar="RECORD.json|BUNDLE")
    p.set_defaults(func=_cmd_verify)


BUILTIN = ("state", "show", "play", "verify")


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """Returns the parser, loading only the plugin commands ``argv`` may need."""
    parser = argparse.ArgumentParser(
        prog="mammamia", description="Mamma Mia! rules engine, game server, bots and ladders."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _builtin(sub)
    wanted = argv[0] if argv and not argv[0].startswith("-") else None
    if wanted not in BUILTIN:
        for ep in sorted(entry_points(group="mammamia.commands"), key=lambda e: e.name):
            if wanted is None or ep.name == wanted:
                ep.load()(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status (2 for bad input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    if not argv:
        # No command: the list of them, rather than argparse's "COMMAND is required".
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except MammaMiaError as e:
        print(f"mammamia {args.command}: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
