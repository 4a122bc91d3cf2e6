"""``mammamia ladder`` (standings, rerate, challenge) and ``mammamia demo``.

Kept light: grpc, the store and the demo are imported inside the handlers, so
``mammamia --help`` stays fast.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .. import options
from ..quoting import quoted
from .cli_standings import connect_command, fetch_standings, leagues_lines, standings_table

if TYPE_CHECKING:
    import grpc

    from mammamia_pb import arena_pb2 as pb
    from mammamia_pb import arena_pb2_grpc as pb_grpc

    from ..db.ladder.store import LadderStore

_Reply = TypeVar("_Reply")


class _Refused(Exception):
    """A call of a command that pages failed (the failure already printed)."""


def _add_server(p: argparse.ArgumentParser) -> None:
    """Adds ``--server`` (MAMMAMIA_SERVER, default 127.0.0.1:50051) to ``p``."""
    p.add_argument(
        "--server",
        default=os.environ.get("MAMMAMIA_SERVER", "127.0.0.1:50051"),
        metavar="ADDR",
        help="server address host:port (MAMMAMIA_SERVER, default 127.0.0.1:50051)",
    )


def register_ladder(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``mammamia ladder standings|matches|bot|record|challenge|scrimmages|export|rerate``."""
    p = sub.add_parser(
        "ladder",
        help="ladder standings, matches, records and ratings",
        description="Read a ladder's standings, a bot's matches and their "
        "game records from a server, or recompute its ratings from the "
        "stored results.",
    )
    cmds = p.add_subparsers(dest="ladder_command", metavar="SUBCOMMAND", required=True)
    s = cmds.add_parser(
        "standings",
        help="print the standings of a server's ladder",
        description="Print the ladder's standings, best conservative rating "
        "(mu - 3 sigma) first; interval is mu ± 2 sigma, p>next the probability "
        "that the bot is better than the next (docs/ratings.md); pizzas is the mean "
        "delivered per match.",
    )
    _add_server(s)
    s.add_argument(
        "--players",
        type=int,
        default=0,
        metavar="N",
        help="only matches of N players (default: all matches)",
    )
    s.add_argument(
        "--by",
        choices=("best", "newest"),
        default="best",
        help="show each bot by its best version (highest conservative rating, the "
        "default) or its newest (the one whose first rated match is the latest)",
    )
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.set_defaults(func=_standings)
    m = cmds.add_parser(
        "matches",
        help="list recent finished ladder matches",
        description="List a bot's (or every bot's) recent finished ladder "
        "matches, newest "
        "first: one JSON object per line (match, players, names, winners, "
        "commitment, and set: id, index, size, rotation for a match of a "
        "duplicate set, else null; voided: reason and by for a voided match, "
        "else null). Read a page at a time (docs/protocol.md, "
        "Paging); `mammamia ladder export` writes every result.",
    )
    _add_server(m)
    m.add_argument(
        "--name", default="", help="the bot's ladder name (default: every bot's matches)"
    )
    m.add_argument(
        "--limit",
        type=options.count,
        default=20,
        metavar="N",
        help="at most N (default 20; 0: every match)",
    )
    m.add_argument(
        "--json",
        action="store_true",
        help="JSON lines, as without it (accepted for symmetry with standings and bot)",
    )
    m.set_defaults(func=_matches)
    b = cmds.add_parser(
        "bot",
        help="print a bot's rated results, by seat position too",
        description="Print a ladder bot's rated results: games, wins and "
        "pizzas for all matches and per player count, and per seat position "
        "(1: round 1's first player, to the last) games, wins, win rate and "
        "mean rank, so that an advantage of a seat shows.",
    )
    _add_server(b)
    b.add_argument("--name", required=True, help="the bot's ladder name")
    b.add_argument("--json", action="store_true", help="print JSON instead of tables")
    b.set_defaults(func=_bot)
    g = cmds.add_parser(
        "record",
        help="print a finished ladder match's game record",
        description="Print the game record (JSON) of a finished ladder "
        "match; `mammamia show FILE` replays a saved one.",
    )
    _add_server(g)
    g.add_argument(
        "--name",
        default="",
        metavar="N",
        help="your bot's name: the record then carries the notes it left (with --key-file)",
    )
    g.add_argument(
        "--key-file",
        default="",
        metavar="F",
        help="the key file of --name (default: N.key)",
    )
    g.add_argument("match_id", metavar="MATCH")
    g.set_defaults(func=_record)
    c = cmds.add_parser(
        "challenge",
        help="play a scrimmage: unrated matches of your bot against named opponents",
        description="Ask the server for a scrimmage: unrated matches between your "
        "bot (entered in the ladder now) and the OPPONENTS named (entered too), "
        "seated on the bots' own Enter streams. Prints each match as it ends (on "
        "stderr), then the table: each player's games, wins, win rate with its 95%% "
        "interval, mean rank and pizzas. Nothing is rated; each record is kept "
        "(`mammamia ladder record MATCH`). With --sprt (one opponent, two players) "
        "it plays deal pairs until the sequential test decides (docs/ladder.md, "
        "'Scrimmages').",
    )
    _add_server(c)
    c.add_argument("--name", required=True, metavar="N", help="your bot's ladder name")
    c.add_argument("--key", default="", help="its secret key (write --key=KEY)")
    c.add_argument(
        "--key-file", default="", metavar="F", help="or the file that holds it (default: N.key)"
    )
    c.add_argument(
        "--version",
        default="",
        metavar="V",
        help="the version that plays: the one entered now (the default) is the only one "
        "connected; another is refused",
    )
    c.add_argument(
        "--players", type=int, default=2, metavar="N", help="players per match (default 2)"
    )
    c.add_argument(
        "--matches",
        type=int,
        default=20,
        metavar="N",
        help="matches to play, 1 to 200 (default 20); with --sprt, the most",
    )
    c.add_argument(
        "--duplicate",
        action="store_true",
        help="play each deal once for every rotation of the seats (matches: a multiple "
        "of --players)",
    )
    c.add_argument(
        "--sprt",
        action="store_true",
        help="run as the sequential test: is your bot better than its one opponent?",
    )
    c.add_argument("--elo0", type=float, default=0.0, help="with --sprt (default 0)")
    c.add_argument("--elo1", type=float, default=50.0, help="with --sprt (default 50)")
    c.add_argument("--alpha", type=float, default=0.05, help="with --sprt (default 0.05)")
    c.add_argument("--beta", type=float, default=0.05, help="with --sprt (default 0.05)")
    c.add_argument("--json", action="store_true", help="print the last report as JSON")
    c.add_argument("opponents", nargs="+", metavar="OPPONENT")
    c.set_defaults(func=_challenge)
    sc = cmds.add_parser(
        "scrimmages",
        help="list the scrimmages a bot asked for, newest first, with their tables",
        description="List the scrimmages a bot (or every bot) asked for, newest "
        "first: each with its opponents, its status and its table (and its test, "
        "with --sprt).",
    )
    _add_server(sc)
    sc.add_argument("--name", default="", metavar="N", help="only the scrimmages N asked for")
    sc.add_argument(
        "--limit", type=int, default=10, metavar="N", help="at most N (default 10; 0: all)"
    )
    sc.add_argument("--json", action="store_true", help="print one JSON object a line")
    sc.set_defaults(func=_scrimmages)
    x = cmds.add_parser(
        "export",
        help="write every ladder result (CSV) and game record (JSON lines)",
        description="Write every ended ladder match, from a live server or "
        "straight from its database (read-only), to the new directory OUT: "
        "results.csv, one row per seat (match_id, finish_order, status, voided, "
        "void_reason, rated, players, created, ended, set_id, set_index, "
        "commitment, seat, name, rank, delivered, position), and records.jsonl, "
        "one game record per line; newest match first (docs/operating.md, "
        "Exporting). Progress goes to stderr. OUT appears only once complete.",
    )
    source = x.add_mutually_exclusive_group(required=True)
    source.add_argument("--server", metavar="ADDR", help="a live server's address host:port")
    source.add_argument(
        "--db",
        metavar="PATH|URL",
        help="the server's database: its SQLite file, or a postgresql:// URL",
    )
    x.add_argument("out", metavar="OUT", help="the directory to write (must not exist)")
    x.add_argument(
        "--organiser-key",
        default=os.environ.get("MAMMAMIA_ORGANISER_KEY", ""),
        metavar="KEY",
        help="with --server: read the records as the organiser, whose calls are not "
        "rate-limited (MAMMAMIA_ORGANISER_KEY; without it, the export waits as the "
        "server's public rate asks)",
    )
    x.add_argument(
        "--every",
        type=options.positive,
        default=100,
        metavar="N",
        help="a progress line after each N matches (default 100)",
    )
    x.add_argument(
        "--page-size",
        type=options.positive,
        default=500,
        metavar="N",
        help="matches read per page (default 500; the server gives at most 1000)",
    )
    x.set_defaults(func=_export)
    r = cmds.add_parser(
        "rerate",
        help="recompute every rating from the stored results",
        description="Recompute every rating from the results stored in the "
        "database, in finish order, and count every bot's games, wins and "
        "pizzas from them; say whether they agree with the stored ratings "
        "and tallies (exit 0) or not (exit 1).",
    )
    r.add_argument(
        "--db",
        required=True,
        metavar="PATH|URL",
        help="the server's database: its SQLite file, or a postgresql:// URL",
    )
    r.set_defaults(func=_rerate)


def register_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``mammamia demo``."""
    p = sub.add_parser(
        "demo",
        help="start a server with a demo ladder of built-in bots",
        description="Start a server with its embedded database and a ladder "
        "played by built-in bots, print the standings as they form, and say "
        "how to connect your own bot. Ctrl-C (or SIGTERM, SIGHUP) stops everything.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=50051, help="port (default 50051)")
    p.add_argument(
        "--web-port",
        type=options.port,
        default=None,
        metavar="PORT",
        help="port of the web page on --host, 0 for any free one (MAMMAMIA_WEB_PORT, default 8051)",
    )
    p.add_argument(
        "--db", default="mammamia.db", metavar="PATH", help="database file (default mammamia.db)"
    )
    p.add_argument(
        "--bots",
        nargs="+",
        default=["random", "greedy", "counter"],
        metavar="SPEC",
        help="bot specs to enter, each --copies times (default: random greedy counter)",
    )
    p.add_argument(
        "--copies", type=int, default=2, metavar="N", help="how many of each bot enter (default 2)"
    )
    p.add_argument(
        "--ladder-players",
        default="2-5",
        metavar="MIN-MAX",
        help="players per ladder match (default 2-5)",
    )
    p.add_argument(
        "--ladder-concurrency",
        type=int,
        default=3,
        metavar="N",
        help="ladder matches at once (default 3)",
    )
    p.add_argument(
        "--ladder-duplicate",
        action="store_true",
        help="play each deal as a duplicate set, once per rotation of the seats (docs/ladder.md)",
    )
    p.add_argument(
        "--competition",
        metavar="FILE",
        help="run the competition this file declares (e.g. "
        "docs/examples/quick-competition.toml; docs/competitions.md)",
    )
    p.add_argument(
        "--every",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="print the standings this often (default 20)",
    )
    p.add_argument(
        "--log-format",
        choices=["console", "json"],
        default=None,
        help="console on a terminal, JSON otherwise (default)",
    )
    p.set_defaults(func=_demo)


def _ladder_call(
    args: argparse.Namespace, call: Callable[[pb_grpc.LadderStub], _Reply]
) -> _Reply | None:
    """Returns the reply of one Ladder ``call`` on the server's stub; prints the
    refusal and returns None."""
    import grpc

    from mammamia_pb import arena_pb2_grpc as pb_grpc

    with grpc.insecure_channel(args.server) as channel:
        try:
            return call(pb_grpc.LadderStub(channel))
        except grpc.RpcError as e:
            print(
                f"mammamia ladder {args.ladder_command}: {args.server}: "
                f"{e.code().name}: {e.details()}{_hint(e, args.server)}",
                file=sys.stderr,
            )
            return None


def _hint(e: grpc.RpcError, server: str) -> str:
    """Returns the hint that ends the message of an RPC failure (for a server that does
    not answer), else nothing."""
    import grpc

    unavailable = isinstance(e, grpc.Call) and e.code() == grpc.StatusCode.UNAVAILABLE
    return f": is the server running at {server}?" if unavailable else ""


def _matches(args: argparse.Namespace) -> int:
    from ..paging import MAX_PAGE_SIZE, follow
    from . import cli_wire

    size = min(args.limit or MAX_PAGE_SIZE, MAX_PAGE_SIZE)

    def read(token: str) -> tuple[Sequence[pb.MatchSummary], str]:
        request = cli_wire.matches_request(args.name, size, token)
        reply = _ladder_call(args, lambda stub: stub.Matches(request, timeout=30))
        if reply is None:
            raise _Refused
        return reply.matches, reply.next_page_token

    try:
        for m in follow(read, args.limit or None):
            print(json.dumps(cli_wire.ladder_match_data(m)))
    except _Refused:
        return 1  # said on stderr
    return 0


def _export(args: argparse.Namespace) -> int:
    from .export import main

    return main(args.server, args.db, args.out, args.every, args.page_size, args.organiser_key)


def _bot(args: argparse.Namespace) -> int:
    from . import cli_wire

    request = cli_wire.bot_stats_request(args.name)
    reply = _ladder_call(args, lambda stub: stub.BotStats(request, timeout=30))
    if reply is None:
        return 1
    data = cli_wire.bot_stats_data(reply)
    if args.json:
        print(json.dumps(data))
        return 0
    for line in bot_tables(data):
        print(line)
    return 0


def bot_tables(data: dict[str, Any]) -> list[str]:
    """Returns a bot's statistics (``cli_wire.bot_stats_data``) as aligned text lines."""
    lines = [f"{data['name']}: rated results"]
    rows: list[tuple[str, ...]] = [("players", "games", "wins", "win%", "pizzas")]
    for t in data["tallies"]:
        rows.append(
            (
                str(t["players"] or "all"),
                str(t["games"]),
                str(t["wins"]),
                _share(t["wins"], t["games"]),
                _mean(t["delivered"], t["games"]),
            )
        )
    lines += _aligned(rows)
    if not data["tallies"]:
        lines.append("(no rated matches yet)")
        return lines
    if data.get("versions"):
        lines.append("versions (each rated on its own; - is the default version)")
        rows = [("version", "rating", "interval", "games", "wins", "first played", "last played")]
        for v in data["versions"]:
            rows.append(
                (
                    v["version"] or "-",
                    f"{v['rating']:.2f}",
                    f"{v['low']:.1f}..{v['high']:.1f}",
                    str(v["games"]),
                    str(v["wins"]),
                    _date(v["first_played"]),
                    _date(v["last_played"]),
                )
            )
        lines += _aligned(rows)
    lines.append("by seat position (1: round 1's first player)")
    rows = [("players", "position", "games", "wins", "win%", "mean rank")]
    for p in data["positions"]:
        rows.append(
            (
                str(p["players"]),
                str(p["position"]),
                str(p["games"]),
                str(p["wins"]),
                _share(p["wins"], p["games"]),
                f"{p['mean_rank']:.2f}",
            )
        )
    lines += _aligned(rows)
    return lines


def _date(at: float | None) -> str:
    """Returns a UNIX time as a UTC date and minute, or "-" when not known."""
    if at is None:
        return "-"
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%d %H:%M")


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def _mean(total: int, n: int) -> str:
    return f"{total / n:.2f}" if n else "-"


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]


def _record(args: argparse.Namespace) -> int:
    from . import cli_wire

    request = cli_wire.record_request(args.match_id)
    metadata: tuple[tuple[str, str], ...] = ()
    if args.name:
        # The bot's own record: its notes come with it, for its key only.
        path = args.key_file or f"{args.name}.key"
        try:
            with open(path, encoding="utf-8") as f:
                key = f.readline().strip()
        except OSError as e:
            print(
                f"mammamia ladder record: --key-file {quoted(path)}: {e.strerror}",
                file=sys.stderr,
            )
            return 2
        request.name = args.name
        metadata = (("bot-key", key),)
    reply = _ladder_call(args, lambda stub: stub.GetRecord(request, metadata=metadata, timeout=30))
    if reply is None:
        return 1
    print(reply.json)
    return 0


def _challenge(args: argparse.Namespace) -> int:
    import grpc

    from mammamia_pb import arena_pb2_grpc as pb_grpc

    from . import cli_wire

    key = args.key
    if not key:
        path = args.key_file or f"{args.name}.key"
        try:
            with open(path, encoding="utf-8") as f:
                key = f.readline().strip()
        except OSError as e:
            print(
                f"mammamia ladder challenge: --key-file {quoted(path)}: {e.strerror} "
                "(or give --key)",
                file=sys.stderr,
            )
            return 2
    request = cli_wire.challenge_request(
        args.name,
        args.version,
        args.opponents,
        args.players,
        args.matches,
        args.duplicate,
        (args.elo0, args.elo1, args.alpha, args.beta) if args.sprt else None,
    )
    last: dict[str, Any] | None = None
    with grpc.insecure_channel(args.server) as channel:
        try:
            for reply in pb_grpc.LadderStub(channel).Challenge(
                request, metadata=(("bot-key", key),)
            ):
                last = cli_wire.scrimmage_data(reply)
                if not last["done"]:
                    print(scrimmage_progress(last), file=sys.stderr)
        except grpc.RpcError as e:
            print(
                f"mammamia ladder challenge: {args.server}: "
                f"{e.code().name}: {e.details()}{_hint(e, args.server)}",
                file=sys.stderr,
            )
            return 1
    if last is None:
        return 1
    if args.json:
        print(json.dumps(last))
    else:
        for line in scrimmage_table(last):
            print(line)
    return 0


def _scrimmages(args: argparse.Namespace) -> int:
    from ..paging import follow
    from . import cli_wire

    def read(token: str) -> tuple[Sequence[pb.ScrimmageSummary], str]:
        request = cli_wire.scrimmages_request(args.name, 20, token)
        reply = _ladder_call(args, lambda stub: stub.Scrimmages(request, timeout=30))
        if reply is None:
            raise _Refused
        return reply.scrimmages, reply.next_page_token

    try:
        for i, summary in enumerate(follow(read, args.limit or None)):
            data = cli_wire.scrimmage_summary_data(summary)
            if args.json:
                print(json.dumps(data))
                continue
            against = ", ".join(data["opponents"])
            status = "playing" if not data["done"] else data["stopped"] or "complete"
            print(
                ("\n" if i else "") + f"{data['name']}@{data['version'] or '-'} against {against}, "
                f"{data['players']} players{', duplicate' if data['duplicate'] else ''}, "
                f"asked {_date(data['created'])} UTC: {status}"
            )
            for line in scrimmage_table(data):
                print(line)
    except _Refused:
        return 1  # said on stderr
    return 0


def scrimmage_progress(data: dict[str, Any]) -> str:
    """Returns the line printed as a scrimmage goes: its last match, and the test."""
    played = f"{data['played']}/{data['planned']}"
    if not data["matches"]:
        return f"scrimmage {data['scrimmage']}: started, {data['planned']} matches at most"
    last = data["matches"][-1]
    shown = last["ranks"] or ["-"] * len(last["names"])
    ranks = ", ".join(f"{n} {r}" for n, r in zip(last["names"], shown, strict=True))
    test = data.get("sprt")
    llr = f"  llr {test['llr']:.2f} ({test['lower']:.2f}, {test['upper']:.2f})" if test else ""
    return f"{played} {last['match_id']} {last['status']}: {ranks}{llr}"


def scrimmage_table(data: dict[str, Any]) -> list[str]:
    """Returns a scrimmage's last report as the lines printed: the table, the test."""
    rows: list[tuple[str, ...]] = [
        ("bot", "version", "games", "wins", "win rate", "95% interval", "rank", "pizzas")
    ]
    for line in data["table"]:
        rows.append(
            (
                line["name"],
                line["version"] or "-",
                str(line["games"]),
                str(line["wins"]),
                f"{line['win_rate']:.3f}",
                f"{line['low']:.3f}-{line['high']:.3f}",
                f"{line['mean_rank']:.2f}",
                f"{line['mean_delivered']:.2f}",
            )
        )
    lines = [
        f"scrimmage {data['scrimmage']}: {data['played']} of {data['planned']} matches"
        + (f" (stopped: {data['stopped']})" if data["stopped"] else ""),
        *_aligned(rows),
    ]
    test = data.get("sprt")
    if test:
        lines.append(
            f"sprt: elo0 {test['elo0']:g}, elo1 {test['elo1']:g}, alpha {test['alpha']:g}, "
            f"beta {test['beta']:g}: llr {test['llr']:.3f} in ({test['lower']:.3f}, "
            f"{test['upper']:.3f}) after {test['pairs']} pairs, pentanomial "
            f"{test['pentanomial']}: {test['decision'] or 'undecided'}"
        )
    return lines


def _standings(args: argparse.Namespace) -> int:
    import grpc

    if args.players and not 2 <= args.players <= 5:
        print(
            f"mammamia ladder standings: --players {args.players}: 2 to 5 (R-SETUP-1)",
            file=sys.stderr,
        )
        return 2
    try:
        data = fetch_standings(args.server, args.players, by=args.by)
    except grpc.RpcError as e:
        print(
            f"mammamia ladder standings: {args.server}: {e.code().name}: {e.details()}"
            f"{_hint(e, args.server)}",
            file=sys.stderr,
        )
        return 1
    if args.json:
        print(json.dumps(data))
        return 0
    scope = f"{args.players}-player matches" if args.players else "matches"
    print(f"{data['matches_finished']} rated {scope}; each bot by its {data['by']} version")
    for line in standings_table(data):
        print(line)
    if not data["standings"]:
        print("(no rated matches yet)")
    for line in leagues_lines(data):
        print(line)
    print(f"your bot on this ladder: {connect_command(args.server)}")
    return 0


def _rerate(args: argparse.Namespace) -> int:
    from ..db.connection import ERRORS, shown
    from ..db.ladder.store import LadderStore
    from ..db.schema import SchemaError, not_a_ladder

    failures: tuple[type[Exception], ...] = (*ERRORS, SchemaError)
    problem = not_a_ladder(args.db)
    if problem:
        print(f"mammamia ladder rerate: --db {shown(args.db)!r}: {problem}", file=sys.stderr)
        return 2
    try:
        store = LadderStore(args.db)
        try:
            with store.snapshot():
                agree = _compare(store)
        finally:
            store.close()
    except failures as e:
        print(f"mammamia ladder rerate: --db {shown(args.db)!r}: {e}", file=sys.stderr)
        return 2
    print(
        "rerate agrees with the stored ratings and tallies"
        if agree
        else "rerate DISAGREES with the stored ratings or tallies"
    )
    return 0 if agree else 1


def _compare(store: LadderStore) -> bool:
    """Returns True when replaying the stored results gives the stored ratings,
    printing one line per scope (all matches, then each player count)."""
    from ..db.ladder.rows import ALL_PLAYERS
    from .ratings import replay

    agree = True
    for players in [ALL_PLAYERS, *store.player_counts()]:
        results = store.rated_results(players)
        recomputed = replay(results)
        stored = store.ratings(players)
        differ = sorted(
            n
            for n in recomputed.keys() | stored.keys()
            if n not in recomputed or n not in stored or not recomputed[n].agrees(stored[n])
        )
        # The tallies (games, wins, pizzas) and the count of rated matches, which the
        # standings read, against a count over the same results.
        tallies, counted = store.tallies(players), store.recount(players)
        miscounted = sorted(
            n for n in tallies.keys() | counted.keys() if tallies.get(n) != counted.get(n)
        )
        if store.rated(players) != len(results):
            miscounted.insert(0, f"the match count ({store.rated(players)})")
        scope = f"{players}-player matches" if players else "all matches"
        verdict = "agree" if not differ else f"DIFFER for {', '.join(differ)}"
        counts = "agree" if not miscounted else f"DIFFER for {', '.join(miscounted)}"
        print(
            f"{scope}: {_count(len(results), 'result')}, {_count(len(stored), 'bot')}:"
            f" ratings {verdict}, tallies {counts}"
        )
        agree = agree and not differ and not miscounted
    # The tallies by seat position, against a count over the same results.
    held, tallied = store.stored_positions(), store.recount_positions()
    positions = sorted(
        {key[1] for key in held.keys() | tallied.keys() if held.get(key) != tallied.get(key)}
    )
    print("seat positions: " + ("agree" if not positions else f"DIFFER for {', '.join(positions)}"))
    agree = agree and not positions
    pending = store.unrated()
    if pending:
        print(
            f"{_count(pending, 'finished result')} not rated yet"
            " (the server rates them when it starts)"
        )
    return agree


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}{'s' * (n != 1)}"


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(args)
