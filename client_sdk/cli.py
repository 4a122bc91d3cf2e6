"""The ``mammamia bot`` and ``mammamia arena`` commands.

Registered through the ``mammamia.commands`` entry points; this module stays light
(the SDK and gRPC are imported by the handlers) so ``mammamia --help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

EXIT_INTERRUPTED = 130
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2

_SPEC_HELP = (
    "a built-in bot (random, greedy, counter, search), module:Class, or "
    "path/to/file.py:Class, optionally followed by @key=value[,key=value]: "
    "keyword arguments for the bot's class (search@budget_ms=50)"
)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def register_bot(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``mammamia bot``."""
    p = sub.add_parser(
        "bot",
        help="play a bot on a server: one seat, the ladder, or as a place",
        description="Play SPEC on a server. With --token, play that seat to the end of its "
        "match and print its result as one JSON line. With --ladder, enter the ladder as "
        "--name (registering it on first use and saving its key to --key-file) and play "
        "match after match until stopped (Ctrl-C). With --place, make one call a place that "
        'an organiser seats in its matches (docs/protocol.md, "Places"): print its token '
        'as one JSON line ({"place": TOKEN}) and play every match it is given until '
        "stopped; a place is not resumed. Reconnects and resumes after a dropped "
        "connection (a bot restarted with the same token resumes its seat too), also across a "
        "server restart (the server resumes its running matches); stops when the server "
        "no longer knows the seat.",
    )
    p.add_argument("spec", metavar="SPEC", help=_SPEC_HELP)
    p.add_argument(
        "--server",
        default=os.environ.get("MAMMAMIA_SERVER", "127.0.0.1:50051"),
        metavar="ADDR",
        help="server address host:port (MAMMAMIA_SERVER, default 127.0.0.1:50051)",
    )
    p.add_argument(
        "--tls-ca",
        default=os.environ.get("MAMMAMIA_TLS_CA"),
        metavar="FILE",
        help="connect with TLS, trusting this PEM CA (MAMMAMIA_TLS_CA)",
    )
    p.add_argument("--token", help="the seat token (from `mammamia match create`)")
    p.add_argument("--name", help="display name (default: the bot's name); the ladder name")
    p.add_argument("--ladder", action="store_true", help="enter the ladder instead of a seat")
    p.add_argument(
        "--version",
        dest="bot_version",
        help="with --ladder: the version of the bot that enters, rated apart from its "
        "other versions (default: the first 12 hex digits of the SHA-256 of the file that "
        "defines the bot's class)",
    )
    p.add_argument(
        "--place", action="store_true", help="wait to be seated by an organiser instead of a seat"
    )
    p.add_argument("--key", help="the ladder bot's secret key (write --key=KEY)")
    p.add_argument(
        "--key-file",
        metavar="FILE",
        help="where the ladder key is kept (default NAME.key); created on first use",
    )
    p.add_argument(
        "--give-up",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="stop after the server is unreachable this long (default 120)",
    )
    p.add_argument(
        "--log-format",
        choices=("console", "json"),
        help="log lines format (default: console on a terminal, else JSON)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log every decision")
    p.set_defaults(func=_cmd_bot)


def register_arena(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``mammamia arena``."""
    p = sub.add_parser(
        "arena",
        help="play local games between bots and compare them",
        description="Play N local games between the SPECs in parallel processes, rotating "
        "seats so no bot gains from where it sits, and print per bot: games, wins (a shared "
        "win counts as a fraction), win rate with a 95% Wilson interval, mean pizzas "
        "delivered, and the decisions answered for it with the safe option: late (past "
        "the deadline) and replaced (late, raised or illegal; each distinct fault is "
        "shown once, with its traceback). With fewer SPECs than players, seats cycle "
        "through the SPECs. The same --seed gives the same games. Ctrl-C stops at once "
        "and prints the statistics of the games finished. With --sprt and two SPECs A B, "
        "a sequential test instead: deal pairs (each deal twice, seats swapped) until "
        "the evidence says B is at least --elo1 better than A, or not better than "
        "--elo0 (docs/bots.md).",
    )
    p.add_argument("specs", metavar="SPEC", nargs="+", help=_SPEC_HELP)
    p.add_argument(
        "--games",
        type=_positive,
        metavar="N",
        help="games to play (default 100); with --sprt, the most it may play (default 20000)",
    )
    p.add_argument(
        "--players",
        type=int,
        metavar="P",
        help="players per game, 2 to 5 (default: the number of SPECs)",
    )
    p.add_argument(
        "--jobs",
        type=_positive,
        metavar="J",
        help="worker processes (default: the number of CPUs; 1 plays in this process)",
    )
    p.add_argument("--seed", type=int, default=0, metavar="S", help="run seed (default 0)")
    p.add_argument(
        "--deadline-ms",
        type=_positive,
        default=5000,
        metavar="MS",
        help="time per decision, as on a server (default 5000, the server's "
        "default): a later answer is replaced by the safe option and counted "
        "as late",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="write every game's record to DIR (game-NNN-BOT-vs-BOT.json; "
        "replay one with `mammamia show FILE`)",
    )
    p.add_argument(
        "--out-lost",
        metavar="NAME",
        help="with --out, write only the games the bot NAME (as the table "
        "names it) played and did not win",
    )
    p.add_argument(
        "--pairs",
        action="store_true",
        help="also print each bot's head-to-head win rate against each other "
        "bot (how often it ranked above it, a tie counting a half)",
    )
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    sprt = p.add_argument_group("sequential test (two SPECs, A then B)")
    sprt.add_argument(
        "--sprt",
        action="store_true",
        help="play deal pairs until B is shown at least --elo1 better than A, or not "
        "better than --elo0; print the LLR, its bounds and the decision",
    )
    sprt.add_argument(
        "--elo0", type=float, default=0.0, metavar="E", help="the no-gain hypothesis (default 0)"
    )
    sprt.add_argument(
        "--elo1", type=float, default=50.0, metavar="E", help="the gain to detect (default 50)"
    )
    sprt.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        metavar="P",
        help="chance of calling B better when it is not (default 0.05)",
    )
    sprt.add_argument(
        "--beta",
        type=float,
        default=0.05,
        metavar="P",
        help="chance of missing a gain of --elo1 (default 0.05)",
    )
    p.set_defaults(func=_cmd_arena)


def _cmd_sprt(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from mammamia.sprt import Sprt

    from .arena import run_sprt
    from .bot import Fault
    from .logs import configure_quiet

    def show_fault(fault: Fault) -> None:
        tqdm.write(f"mammamia arena: {fault.describe()}", file=sys.stderr)

    if len(args.specs) != 2 or (args.players or 2) != 2:
        print(
            "mammamia arena: --sprt compares two bots in two-player games: give two "
            "SPECs (A, the baseline, then B) and no --players other than 2",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    if args.out is not None or args.pairs:
        print("mammamia arena: --sprt does not take --out or --pairs", file=sys.stderr)
        return EXIT_BAD_INPUT
    configure_quiet()
    try:
        test = Sprt(args.elo0, args.elo1, args.alpha, args.beta)
        result = run_sprt(
            args.specs[0],
            args.specs[1],
            test,
            cap=args.games or 20_000,
            jobs=args.jobs,
            seed=args.seed,
            progress=not args.no_progress,
            configure=configure_quiet,
            deadline_ms=args.deadline_ms,
            on_fault=show_fault,
        )
    except ValueError as e:
        print(f"mammamia arena: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(json.dumps(result.to_json()) if args.json else result.summary())
    return EXIT_INTERRUPTED if result.interrupted else 0


def _cmd_arena(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .arena import run_arena
    from .bot import Fault
    from .logs import configure_quiet

    def show_fault(fault: Fault) -> None:
        tqdm.write(
            f"mammamia arena: {fault.describe()}\n(the same fault again is only "
            f"counted, in the replaced column)",
            file=sys.stderr,
        )

    if args.sprt:
        return _cmd_sprt(args)
    if args.out_lost is not None and args.out is None:
        print("mammamia arena: --out-lost NAME needs --out DIR", file=sys.stderr)
        return EXIT_BAD_INPUT
    configure_quiet()
    try:
        result = run_arena(
            args.specs,
            games=args.games or 100,
            players=args.players,
            jobs=args.jobs,
            seed=args.seed,
            progress=not args.no_progress,
            configure=configure_quiet,
            deadline_ms=args.deadline_ms,
            out=args.out,
            out_lost=args.out_lost,
            on_fault=show_fault,
        )
    except ValueError as e:
        print(f"mammamia arena: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if result.interrupted:
        print(
            f"mammamia arena: interrupted: {result.finished} of {result.games} games finished",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(
            f"{result.finished} games, {result.players} players, seed {result.seed}"
            + (f" (interrupted, of {result.games})" if result.interrupted else "")
        )
        print(result.table())
        if args.pairs:
            print()
            print("head to head: the row's rate against the column")
            print(result.pairs_table())
    return EXIT_INTERRUPTED if result.interrupted else 0


def _cmd_bot(args: argparse.Namespace) -> int:
    import structlog

    from .connection import (
        ConnectionLost,
        SeatRefused,
        register,
        run_bot,
        run_ladder,
        run_place,
        tls_credentials,
    )
    from .loader import BotSpecError, code_version, load_bot
    from .logs import configure

    configure(args.log_format, logging.DEBUG if args.verbose else logging.INFO)
    log = structlog.get_logger()
    factory = load_bot(args.spec)
    credentials = None
    if args.tls_ca:
        try:
            with open(args.tls_ca, "rb") as f:
                credentials = tls_credentials(f.read())
        except OSError as e:
            print(
                f"mammamia bot: cannot read --tls-ca {args.tls_ca!r}: {e.strerror}", file=sys.stderr
            )
            return EXIT_BAD_INPUT
    if [bool(args.token), args.ladder, args.place].count(True) != 1:
        print(
            "mammamia bot: give one of --token TOKEN, --ladder --name NAME and --place",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    try:
        if args.place:

            def placed(token: str) -> None:
                print(json.dumps({"place": token}), flush=True)

            run_place(
                factory,
                args.server,
                name=args.name or factory().name,
                placed=placed,
                credentials=credentials,
            )
            return 0
        if args.token:
            bot = factory()
            result = run_bot(
                bot,
                args.server,
                args.token,
                name=args.name,
                give_up=args.give_up,
                credentials=credentials,
            )
            print(
                json.dumps(
                    {
                        "match": result.match_id,
                        "seat": result.seat,
                        "status": result.status,
                        "won": result.won,
                        "winners": list(result.winners),
                        "delivered": list(result.delivered),
                    }
                )
            )
            return 0
        # The ladder name, as the help says: --name, else the bot's own name.
        args.name = args.name or factory().name
        # SIGTERM (a service manager's stop) leaves the ladder as Ctrl-C does, but
        # ends with code 0: it is the ordinary end of a ladder bot's run.
        signal.signal(signal.SIGTERM, _terminated)
        key = args.key or _ladder_key(args, lambda: register(args.server, args.name, credentials))
        version = args.bot_version if args.bot_version is not None else code_version(factory)
        run_ladder(
            factory,
            args.server,
            args.name,
            key,
            give_up=args.give_up,
            credentials=credentials,
            key_file=None if args.key else str(Path(args.key_file or f"{args.name}.key")),
            version=version,
        )
        return 0
    except SeatRefused as e:
        print(f"mammamia bot: refused: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (_KeyFileError, BotSpecError) as e:
        print(f"mammamia bot: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ConnectionLost as e:
        print(f"mammamia bot: gave up: {e}", file=sys.stderr)
        return EXIT_FAILED
    except _Terminated:
        log.info("bot_stopped", reason="SIGTERM")
        return 0
    except KeyboardInterrupt:
        log.info("bot_stopped", reason="interrupted")
        return EXIT_INTERRUPTED


class _Terminated(KeyboardInterrupt):
    """SIGTERM stopped a ladder bot (a KeyboardInterrupt, so that it ends the run as
    Ctrl-C does)."""


def _terminated(signum: int, frame: object) -> None:
    """Raises _Terminated (the SIGTERM handler of a ladder bot)."""
    raise _Terminated


class _KeyFileError(Exception):
    """The key file cannot be read or created."""


def _ladder_key(args: argparse.Namespace, register: Callable[[], Coroutine[Any, Any, str]]) -> str:
    """Returns the ladder key from the key file, registering the name (and writing the
    file, readable by its owner only) when the file does not exist yet.

    The file is created before the name is registered, so that a key file that cannot
    be written costs no name (raises _KeyFileError); should writing the key still fail
    afterwards, the key is printed once on stderr rather than lost.
    """
    import asyncio

    import structlog

    path = Path(args.key_file or f"{args.name}.key")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            key = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise _KeyFileError(f"cannot read --key-file {str(path)!r}: {e}") from None
        if not key:
            raise _KeyFileError(
                f"--key-file {str(path)!r} is empty: remove it to register "
                f"{args.name!r}, or pass --key"
            ) from None
        return key
    except OSError as e:
        raise _KeyFileError(f"cannot create --key-file {str(path)!r}: {e.strerror}") from None
    try:
        key = asyncio.run(register())
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)  # nothing registered: leave no empty key file
        raise
    try:
        data = f"{key}\n".encode()
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
    except OSError as e:
        path.unlink(missing_ok=True)
        print(
            f"mammamia bot: registered {args.name!r} but cannot write --key-file "
            f"{str(path)!r} ({e.strerror}); keep this key, it is shown only once: {key}",
            file=sys.stderr,
        )
        return key
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    structlog.get_logger().info("ladder_registered", name=args.name, key_file=str(path))
    return key
