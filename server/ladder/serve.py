"""The ladder as an extension of ``mammamia serve`` (entry-point group ``mammamia.server``).

``add_arguments`` adds the ladder's ``serve`` flags; ``install`` opens the ladder's
tables in the server's database, settles what a crash cut off, and registers the
Ladder servicer and the scheduler's loop with the server (see ``server.app``).
Kept light: grpc and the ladder are imported by ``install`` only.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

from .. import options
from ..options import checked, env_default

if TYPE_CHECKING:
    from ..app import Arena


#: The defaults of the name flags (as in server.ladder.ladder, which is not imported here).
DEFAULT_NAME_EXPIRY_S = 86400
DEFAULT_MAX_UNENTERED = 10_000
DEFAULT_QUARANTINE = 10  # as server.ladder.discipline.DEFAULT_QUARANTINE
MAX_NAME_EXPIRY_S = 366 * 86400


@checked
def _players(text: str) -> tuple[int, int]:
    from .scheduler import parse_players

    return parse_players(text)


@checked
def _expiry(text: str) -> float:
    """Returns a number of seconds from 0 (never) up to a year."""
    try:
        value = float(text.strip())
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= MAX_NAME_EXPIRY_S):
        raise ValueError(f"need a number of seconds from 0 (never) up to {MAX_NAME_EXPIRY_S}")
    return value


@checked
def _on_off(text: str) -> bool:
    """Returns True for on (1, yes, true), False for off (0, no, false)."""
    word = text.strip().lower()
    if word in ("on", "1", "yes", "true"):
        return True
    if word in ("off", "0", "no", "false", ""):
        return False
    raise ValueError("need on or off")


@checked
def _leagues(text: str) -> str:
    """Returns the leagues' text once it names good leagues (``parse_leagues``)."""
    from .leagues import parse_leagues

    parse_leagues(text)
    return text


@checked
def _sigmas(text: str) -> float:
    """Returns a width from 0 to 10 (sigmas)."""
    try:
        value = float(text.strip())
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= 10):
        raise ValueError("need a number of sigmas from 0 to 10")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds ``--ladder-players``, ``--ladder-concurrency``, ``--ladder-deadline-ms``,
    ``--ladder-start-timeout``, ``--ladder-name-expiry``, ``--ladder-max-unentered``
    ``--ladder-duplicate``, the quotas ``--ladder-quota-matches``,
    ``--ladder-quota-entries`` and ``--ladder-quota-scrimmages``,
    ``--ladder-quarantine``, and the leagues' ``--leagues`` and ``--league-sigmas``
    to ``mammamia serve``."""
    g = parser.add_argument_group(
        "ladder", "the server-run ladder (bots enter with `mammamia bot SPEC --ladder --name NAME`)"
    )
    g.add_argument(
        "--ladder-players",
        type=_players,
        default=env_default("MAMMAMIA_LADDER_PLAYERS", "2-5"),
        metavar="MIN-MAX",
        help="players per ladder match, 2 to 5 (MAMMAMIA_LADDER_PLAYERS, default 2-5)",
    )
    g.add_argument(
        "--ladder-concurrency",
        type=options.positive,
        default=env_default("MAMMAMIA_LADDER_CONCURRENCY", "4"),
        metavar="N",
        help="ladder matches running at once (MAMMAMIA_LADDER_CONCURRENCY, default 4)",
    )
    g.add_argument(
        "--ladder-deadline-ms",
        type=options.deadline_ms_or_default,
        default=env_default("MAMMAMIA_LADDER_DEADLINE_MS", "0"),
        metavar="MS",
        help="per-decision deadline of ladder matches (MAMMAMIA_LADDER_DEADLINE_MS, "
        "default 0: the server's --deadline-ms)",
    )
    g.add_argument(
        "--ladder-start-timeout",
        type=options.timeout,
        default=env_default("MAMMAMIA_LADDER_START_TIMEOUT", "10"),
        metavar="SEC",
        help="a ladder match starts when its bots joined or after "
        "this long (MAMMAMIA_LADDER_START_TIMEOUT, default 10)",
    )
    g.add_argument(
        "--ladder-name-expiry",
        type=_expiry,
        default=env_default("MAMMAMIA_LADDER_NAME_EXPIRY", str(DEFAULT_NAME_EXPIRY_S)),
        metavar="SEC",
        help="a registered name that never entered the ladder is "
        "removed after this long (MAMMAMIA_LADDER_NAME_EXPIRY, default "
        f"{DEFAULT_NAME_EXPIRY_S}: 24 hours; 0: never)",
    )
    g.add_argument(
        "--ladder-max-unentered",
        type=options.positive,
        default=env_default("MAMMAMIA_LADDER_MAX_UNENTERED", str(DEFAULT_MAX_UNENTERED)),
        metavar="N",
        help="registered names that never entered, at most; "
        "Register beyond it is refused with RESOURCE_EXHAUSTED "
        f"(MAMMAMIA_LADDER_MAX_UNENTERED, default {DEFAULT_MAX_UNENTERED})",
    )
    g.add_argument(
        "--ladder-duplicate",
        type=_on_off,
        nargs="?",
        const=True,
        default=env_default("MAMMAMIA_LADDER_DUPLICATE", "off"),
        metavar="on|off",
        help="play every ladder deal as a duplicate set: once for every rotation "
        "of the seats, by the same bots (docs/ladder.md); off by default, as it "
        "saved few matches in docs/ratings.md (MAMMAMIA_LADDER_DUPLICATE, "
        "default off)",
    )
    g.add_argument(
        "--ladder-quota-scrimmages",
        type=options.count,
        # discipline.DEFAULT_SCRIMMAGES_PER_HOUR, not imported here: --help stays quick.
        default=env_default("MAMMAMIA_LADDER_QUOTA_SCRIMMAGES", "10"),
        metavar="N",
        help="scrimmages (`mammamia ladder challenge`) a bot may ask for in any hour, one "
        "at a time (MAMMAMIA_LADDER_QUOTA_SCRIMMAGES, default 10; 0: no quota)",
    )
    g.add_argument(
        "--ladder-quota-matches",
        type=options.count,
        default=env_default("MAMMAMIA_LADDER_QUOTA_MATCHES", "0"),
        metavar="N",
        help="ladder matches a bot plays in any hour, at most: the scheduler does not "
        "seat it beyond (a bot's own quota, `mammamia admin quota`, comes first) "
        "(MAMMAMIA_LADDER_QUOTA_MATCHES, default 0: no quota)",
    )
    g.add_argument(
        "--ladder-quota-entries",
        type=options.count,
        default=env_default("MAMMAMIA_LADDER_QUOTA_ENTRIES", "0"),
        metavar="N",
        help="Ladder.Enter calls a bot makes in an hour, at most: RESOURCE_EXHAUSTED "
        "beyond (MAMMAMIA_LADDER_QUOTA_ENTRIES, default 0: no quota)",
    )
    g.add_argument(
        "--ladder-quarantine",
        type=options.count,
        default=env_default("MAMMAMIA_LADDER_QUARANTINE", str(DEFAULT_QUARANTINE)),
        metavar="N",
        help="a bot whose last N finished matches were mostly played by the default "
        "policy (late answers, strikes, no stream) is suspended as `quarantine` "
        f"(MAMMAMIA_LADDER_QUARANTINE, default {DEFAULT_QUARANTINE}; 0: never)",
    )
    g.add_argument(
        "--leagues",
        type=_leagues,
        default=env_default("MAMMAMIA_LEAGUES", ""),
        metavar="'NAME=BOT ...'",
        help="leagues with boss bots, lowest first: NAME=BOT words (a built-in bot: "
        "random, greedy, counter, search@budget_ms=N), the last may be a bare NAME "
        "(no boss); a new bot starts in the first and moves up as it passes its boss "
        "(docs/ladder.md, Leagues) (MAMMAMIA_LEAGUES, default none: no leagues)",
    )
    g.add_argument(
        "--league-sigmas",
        type=_sigmas,
        default=env_default("MAMMAMIA_LEAGUE_SIGMAS", "2"),
        metavar="K",
        help="a bot moves up when its mu - K sigma passes its boss's "
        "(MAMMAMIA_LEAGUE_SIGMAS, default 2: the standings' interval)",
    )
    from ..competition.serve import add_arguments as add_competition

    add_competition(g)


def install(arena: Arena, args: argparse.Namespace) -> None:
    """Registers the ladder with the server (flags parsed by :func:`add_arguments`)."""
    from mammamia_pb import arena_pb2_grpc as pb_grpc

    from ..competition.serve import adjust
    from ..db.ladder.store import LadderStore
    from .discipline import Bounds
    from .ladder import Ladder
    from .matches import ServerMatches
    from .metrics import watch as watch_metrics
    from .scheduler import Policy
    from .service import LadderServicer

    adjust(args)  # a competition file's player counts and deadline rule
    low, high = args.ladder_players
    policy = Policy(low, high, concurrency=args.ladder_concurrency)
    matches = ServerMatches(
        arena.runners, deadline_ms=args.ladder_deadline_ms, start_timeout=args.ladder_start_timeout
    )
    store = LadderStore(arena.storage.path)
    # On PostgreSQL: one ladder among many hosts, or (duplicate sets) one host's alone.
    store.claim(alone=bool(args.ladder_duplicate), host=arena.storage.host_id)
    ladder = Ladder(
        store,
        matches,
        policy,
        name_expiry=args.ladder_name_expiry,
        max_unentered=args.ladder_max_unentered,
        duplicate=args.ladder_duplicate,
        host_id=arena.storage.host_id,
        advertise=lambda: arena.advertise,
        bounds=Bounds(
            matches_per_hour=args.ladder_quota_matches,
            entries_per_hour=args.ladder_quota_entries,
            quarantine=args.ladder_quarantine,
            scrimmages_per_hour=args.ladder_quota_scrimmages,
        ),
        runners=arena.runners,
    )
    # Leagues (off unless named): stored for every host and the web page to read.
    from ..db.ladder.rows import LadderError
    from .leagues import Bosses, parse_leagues

    leagues = parse_leagues(args.leagues, args.league_sigmas)
    try:
        store.configure_leagues(leagues)
    except LadderError as e:
        raise SystemExit(f"mammamia serve: --leagues: {e}") from None
    if leagues:
        ladder.play_bosses(Bosses(leagues, arena.runners))
    from ..admin.serve import install as install_admin
    from ..competition.serve import install as install_competition

    # The operators' switches: a pause or a closed registration outlives a restart.
    install_admin(arena, ladder)

    # First: the finals matches a restart cut off are the competition's to settle.
    install_competition(arena, args, ladder)
    # The host holds, at this point, exactly the matches it resumed from its journal.
    ladder.recover(resumed=set(arena.runners.matches))
    servicer = LadderServicer(ladder)
    # The web page's play view lends the ladder's entered bots (server.web.play).
    args.ladder_run = ladder
    arena.add_service(
        "mammamia.v1.Ladder", lambda server: pb_grpc.add_LadderServicer_to_server(servicer, server)
    )
    if arena.leases is not None:
        # Matches taken over from a host whose lease lapsed: settled, seats announced.
        arena.leases.on_taken(ladder.take_over)
    arena.add_task(ladder.run)
    arena.on_drained(ladder.settled)
    watch_metrics(arena.metrics, ladder)
    # The ladder's writes (entries, heartbeats, results) failing is the database away
    # for this host too, even with no match running to say so.
    arena.watch_storage(ladder.writer)
