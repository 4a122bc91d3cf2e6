"""The ``mammamia serve`` and ``mammamia match`` commands.

This module stays light (no gRPC import at module level) so that ``mammamia --help``
is quick; the handlers import what they need.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import options
from .cli_common import CommandRefused, add_call_flags, call, guarded, organiser_key
from .options import env, env_default

#: The default of ``--host-lease`` (``server.leases.DEFAULT_LEASE_S``, not imported:
#: the module stays light).
DEFAULT_HOST_LEASE_S = 15.0

if TYPE_CHECKING:
    from .quotas import Quotas

EXIT_BAD_INPUT = 2
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


# -- serve -------------------------------------------------------------------------------


def register_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds the ``serve`` command."""
    p = sub.add_parser(
        "serve",
        help="run the game server",
        description="Run the gRPC game server with its embedded SQLite database (or a "
        "PostgreSQL one: --db postgresql://...). Every "
        "option can also be set by the environment variable named in its help. SIGTERM "
        "(or Ctrl-C) drains: health NOT_SERVING, no new matches, running matches finish "
        "within --drain-seconds or are marked aborted.",
    )
    options.one_line_errors(p)
    p.add_argument(
        "--host",
        default=env("MAMMAMIA_HOST", "127.0.0.1"),
        help="address to bind (MAMMAMIA_HOST, default 127.0.0.1)",
    )
    p.add_argument(
        "--port",
        type=options.port,
        default=env_default("MAMMAMIA_PORT", "50051"),
        help="port to bind, 0 for any free one (MAMMAMIA_PORT, default 50051)",
    )
    p.add_argument(
        "--advertise",
        type=options.address,
        default=env_default("MAMMAMIA_ADVERTISE", ""),
        metavar="HOST:PORT",
        help="the address bots reach this server at, given to bots entered "
        "through other hosts of a shared PostgreSQL database whose ladder match "
        "runs here (MAMMAMIA_ADVERTISE, default the bound address, the "
        "machine's name for a wildcard --host)",
    )
    p.add_argument(
        "--host-id",
        default=env("MAMMAMIA_HOST_ID"),
        metavar="NAME",
        help="this server's name among the hosts of a shared PostgreSQL "
        "database: it resumes the matches of its name after a restart, so keep "
        "it across restarts (MAMMAMIA_HOST_ID, default the --advertise address)",
    )
    p.add_argument(
        "--host-lease",
        type=options.timeout,
        default=env_default("MAMMAMIA_HOST_LEASE", str(DEFAULT_HOST_LEASE_S)),
        metavar="SEC",
        help="on a shared PostgreSQL database, a host silent this long is gone: "
        "another host takes its unfinished matches over (MAMMAMIA_HOST_LEASE, "
        f"default {DEFAULT_HOST_LEASE_S:g})",
    )
    p.add_argument(
        "--port-file",
        default=env("MAMMAMIA_PORT_FILE"),
        metavar="PATH",
        help="write the bound port to PATH once serving (MAMMAMIA_PORT_FILE)",
    )
    p.add_argument(
        "--db",
        default=env("MAMMAMIA_DB", "mammamia.db"),
        metavar="PATH",
        help="SQLite database file, or a postgresql://USER@HOST:PORT/DB URL "
        "(MAMMAMIA_DB, default ./mammamia.db)",
    )
    key = p.add_mutually_exclusive_group()
    key.add_argument(
        "--organiser-key",
        default=env("MAMMAMIA_ORGANISER_KEY"),
        metavar="KEY",
        help="the organiser key (MAMMAMIA_ORGANISER_KEY; visible in the "
        "process list when given here, so prefer the variable or "
        "--organiser-key-file; generated and printed once when none is given)",
    )
    key.add_argument(
        "--organiser-key-file",
        default=env("MAMMAMIA_ORGANISER_KEY_FILE"),
        metavar="PATH",
        help="read the organiser key from the first line of PATH (MAMMAMIA_ORGANISER_KEY_FILE)",
    )
    p.add_argument(
        "--operators",
        default=env("MAMMAMIA_OPERATORS"),
        metavar="FILE",
        help="the operators who may make organiser and admin calls besides the "
        "organiser: a TOML file of names and key hashes, written by `mammamia admin "
        "operators add NAME --file FILE`; read at start (MAMMAMIA_OPERATORS; "
        "docs/operating.md)",
    )
    p.add_argument(
        "--log-format",
        choices=("console", "json"),
        default=env("MAMMAMIA_LOG_FORMAT"),
        help="log format (MAMMAMIA_LOG_FORMAT; console on a terminal, else json)",
    )
    p.add_argument(
        "--tls-cert",
        default=env("MAMMAMIA_TLS_CERT"),
        metavar="FILE",
        help="PEM certificate chain; with --tls-key serves TLS (MAMMAMIA_TLS_CERT)",
    )
    p.add_argument(
        "--tls-key",
        default=env("MAMMAMIA_TLS_KEY"),
        metavar="FILE",
        help="PEM private key (MAMMAMIA_TLS_KEY)",
    )
    p.add_argument(
        "--deadline-ms",
        type=options.deadline_ms,
        default=env_default("MAMMAMIA_DEADLINE_MS", "5000"),
        metavar="MS",
        help="default per-decision deadline, 1 to "
        f"{options.MAX_DEADLINE_MS} (MAMMAMIA_DEADLINE_MS, default 5000)",
    )
    p.add_argument(
        "--start-timeout",
        type=options.timeout,
        default=env_default("MAMMAMIA_START_TIMEOUT", "30"),
        metavar="SEC",
        help="a match starts when all seats joined or after this long "
        "(MAMMAMIA_START_TIMEOUT, default 30)",
    )
    p.add_argument(
        "--event-loop",
        choices=("uvloop", "asyncio"),
        default=env("MAMMAMIA_EVENT_LOOP", _default_loop()),
        help="the event loop: uvloop (libuv; faster, the default where it is "
        "installed) or Python's own asyncio loop (MAMMAMIA_EVENT_LOOP)",
    )
    p.add_argument(
        "--drain-seconds",
        type=options.grace,
        default=env_default("MAMMAMIA_DRAIN_SECONDS", "30"),
        metavar="SEC",
        help="on SIGTERM, how long running matches may go on before they are "
        "aborted (MAMMAMIA_DRAIN_SECONDS, default 30)",
    )
    _add_quotas(p)
    for ext in _extensions():
        add = getattr(ext, "add_arguments", None)
        if add is not None:
            add(p)
    p.set_defaults(func=_serve)


def _add_quotas(p: argparse.ArgumentParser) -> None:
    """Adds the flags of every bound in ``server.quotas.Quotas`` (defaults from there)."""
    from .quotas import Quotas

    q = Quotas()
    g = p.add_argument_group(
        "limits",
        "what one client may hold of the server and how often it may ask (docs/operations.md)",
    )

    def bound(
        flag: str, var: str, kind: Callable[[str], object], default: object, metavar: str, text: str
    ) -> None:
        g.add_argument(
            flag,
            type=kind,
            default=env_default(var, str(default)),
            metavar=metavar,
            help=f"{text} ({var}, default {default})",
        )

    bound(
        "--max-connections",
        "MAMMAMIA_MAX_CONNECTIONS",
        options.count,
        q.max_connections,
        "N",
        "connections accepted at once; 0: the open-file limit (raised to its hard "
        "limit at start-up) less 128",
    )
    bound(
        "--idle-seconds",
        "MAMMAMIA_IDLE_SECONDS",
        options.timeout,
        q.idle_seconds,
        "SEC",
        "a connection without calls is closed after this long",
    )
    bound(
        "--max-connection-age",
        "MAMMAMIA_MAX_CONNECTION_AGE",
        options.timeout,
        q.age_seconds,
        "SEC",
        "a connection is asked to reconnect (GOAWAY) after this long",
    )
    bound(
        "--connection-age-grace",
        "MAMMAMIA_CONNECTION_AGE_GRACE",
        options.grace,
        q.age_grace_seconds,
        "SEC",
        "calls still open on a connection that reached its age are cut after this long",
    )
    bound(
        "--handshake-timeout",
        "MAMMAMIA_HANDSHAKE_TIMEOUT",
        options.timeout,
        q.handshake_seconds,
        "SEC",
        "a new connection must complete its HTTP/2 (and TLS) handshake within this long",
    )
    bound(
        "--keepalive-seconds",
        "MAMMAMIA_KEEPALIVE_SECONDS",
        options.timeout,
        q.keepalive_seconds,
        "SEC",
        "the server pings a quiet connection this often and "
        "closes it when the ping is not answered within 20 s",
    )
    bound(
        "--streams-per-connection",
        "MAMMAMIA_STREAMS_PER_CONNECTION",
        options.positive,
        q.streams_per_connection,
        "N",
        "calls open at once on one connection (HTTP/2 "
        "concurrent streams; a client queues the calls beyond it)",
    )
    bound(
        "--pending-calls",
        "MAMMAMIA_PENDING_CALLS",
        options.positive,
        q.pending_calls,
        "N",
        "new calls that may wait to be taken up; beyond it gRPC cancels new calls "
        "at random, all of them beyond twice it",
    )
    bound(
        "--streams-per-seat",
        "MAMMAMIA_STREAMS_PER_SEAT",
        options.positive,
        q.streams_per_seat,
        "N",
        "Observe and Play streams open at once for one seat "
        "token; more are refused with RESOURCE_EXHAUSTED",
    )
    bound(
        "--reply-queue",
        "MAMMAMIA_REPLY_QUEUE",
        options.positive,
        q.reply_queue,
        "N",
        "answers a Play stream takes while its replies wait to be read; then it reads no "
        "more until the client reads",
    )
    bound(
        "--register-rate",
        "MAMMAMIA_REGISTER_RATE",
        _rate,
        q.register_rate,
        "RATE",
        "Ladder.Register calls per client address, e.g. 20/minute; '' for no limit",
    )
    bound(
        "--public-rate",
        "MAMMAMIA_PUBLIC_RATE",
        _rate,
        q.public_rate,
        "RATE",
        "calls without a key (Spectate, Ladder standings, matches, results and records) per "
        "client address; '' for no limit",
    )


@options.checked
def _rate(text: str) -> str:
    from .quotas import check_rate

    return check_rate(text)


def _quotas(args: argparse.Namespace) -> Quotas:
    """Returns the bounds the parsed ``serve`` flags set."""
    from .quotas import Quotas

    return Quotas(
        max_connections=args.max_connections,
        idle_seconds=args.idle_seconds,
        age_seconds=args.max_connection_age,
        age_grace_seconds=args.connection_age_grace,
        handshake_seconds=args.handshake_timeout,
        keepalive_seconds=args.keepalive_seconds,
        streams_per_connection=args.streams_per_connection,
        pending_calls=args.pending_calls,
        streams_per_seat=args.streams_per_seat,
        reply_queue=args.reply_queue,
        register_rate=args.register_rate,
        public_rate=args.public_rate,
    )


def _default_loop() -> str:
    """Returns "uvloop" when it is installed (not on Windows), else "asyncio"."""
    from importlib.util import find_spec

    return "uvloop" if find_spec("uvloop") is not None else "asyncio"


def _extensions() -> list[ModuleType]:
    """Returns the modules of the ``mammamia.server`` entry points, by name."""
    from importlib.metadata import entry_points

    return [ep.load() for ep in sorted(entry_points(group="mammamia.server"), key=lambda e: e.name)]


def _serve(args: argparse.Namespace) -> int:
    import asyncio

    from client_sdk import logs

    from .db.connection import ERRORS, StorageError, shown

    if bool(args.tls_cert) != bool(args.tls_key):
        print("mammamia serve: --tls-cert and --tls-key go together", file=sys.stderr)
        return 2
    taken = _port_taken(args.host, args.port)
    if taken:
        print(
            f"mammamia serve: cannot listen on {args.host}:{args.port}: {taken} (another "
            f"server runs there? pick another --port, or 0 for any free one)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    try:
        args.organiser_key = organiser_key(args)
    except CommandRefused as e:
        print(f"mammamia serve: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    from .operators import OperatorsError, load

    try:
        args.operator_hashes = load(args.operators) if args.operators else {}
    except OperatorsError as e:
        print(f"mammamia serve: --operators: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    logs.configure(args.log_format, cache=True)
    fresh = [
        f"{args.db}{end}"
        for end in ("", "-wal", "-shm", ".journal")
        if not os.path.exists(f"{args.db}{end}")
    ]
    try:
        if args.event_loop == "uvloop":
            import uvloop

            uvloop.run(_run(args))
        else:
            asyncio.run(_run(args))
    except StorageError as e:
        print(f"mammamia serve: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except _CannotListen as e:
        for path in fresh:  # leave no database behind a server that never ran
            with contextlib.suppress(OSError):
                os.remove(path)
        print(f"mammamia serve: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as e:
        print(f"mammamia serve: {e}", file=sys.stderr)
        return 1
    except ERRORS as e:
        print(f"mammamia serve: database {shown(args.db)!r}: {e}", file=sys.stderr)
        return 1
    return 0


class _CannotListen(OSError):
    """The server cannot bind its address."""


def _port_taken(host: str, port: int) -> str | None:
    """Returns why ``host:port`` cannot be bound (None when it can, or cannot be told).

    Checked before the database is opened, so a taken port leaves nothing behind; and
    by a bind without SO_REUSEPORT, which gRPC sets and which would let a second
    server share a port that another gRPC server listens on.
    """
    import errno
    import socket

    if port == 0:
        return None
    try:
        infos = socket.getaddrinfo(
            host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror:
        return None
    for family, kind, proto, _, address in infos:
        try:
            with socket.socket(family, kind, proto) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return "the port is taken"
    return None


async def _run(args: argparse.Namespace) -> None:
    import grpc
    import structlog

    from . import garbage
    from .app import create_server, serve_until_signalled
    from .db.connection import StorageError
    from .operators import Operators
    from .quotas import raise_descriptor_limit
    from .tokens import new_organiser_key

    log = structlog.get_logger()
    descriptors = raise_descriptor_limit()
    key = args.organiser_key
    if not key:
        key = new_organiser_key()
        print(f"organiser key: {key}", flush=True)
        log.info("organiser_key_generated", hint="printed once on stdout")
    credentials = None
    if args.tls_cert:
        with open(args.tls_key, "rb") as k, open(args.tls_cert, "rb") as c:
            credentials = grpc.ssl_server_credentials([(k.read(), c.read())])
    host = args.host
    address = (
        f"[{host}]:{args.port}"
        if ":" in host and not host.startswith("[")
        else f"{host}:{args.port}"
    )
    extensions = [lambda arena, ext=ext: ext.install(arena, args) for ext in _extensions()]
    try:
        arena, port = await create_server(
            address,
            db_path=args.db,
            organiser_key=key,
            deadline_ms=args.deadline_ms,
            start_timeout=args.start_timeout,
            credentials=credentials,
            extensions=extensions,
            exclusive=True,
            quotas=_quotas(args),
            host_id=args.host_id or "",
            advertise=args.advertise or "",
            lease=args.host_lease,
            operators=Operators(key, args.operator_hashes),
        )
    except StorageError:
        raise  # the database's own message, not the address's
    except RuntimeError as e:
        raise _CannotListen(f"cannot listen on {address}: {e}") from None
    await arena.start()
    garbage.settle()
    log.info(
        "serving",
        address=f"{host}:{port}",
        db=arena.storage.name,
        advertise=arena.advertise,
        host_id=arena.storage.host_id,
        tls=credentials is not None,
        services=arena.services,
        open_file_limit=descriptors,
    )
    if credentials is None and host not in LOOPBACK:
        log.warning(
            "plaintext_beyond_loopback",
            address=f"{host}:{port}",
            hint="seat tokens and the organiser key travel unencrypted; use --tls-cert/--tls-key",
        )
    if args.port_file:
        tmp = f"{args.port_file}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.port_file)
    await serve_until_signalled(arena, args.drain_seconds, started=True)


# -- match -------------------------------------------------------------------------------


def register_match(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds the ``match`` command (create, record, list)."""
    p = sub.add_parser(
        "match",
        help="create and inspect matches on a server (organiser)",
        description="Organiser commands, made as the operator whose key is given: "
        "--organiser-key (or --operator-key), --organiser-key-file, or "
        "MAMMAMIA_ORGANISER_KEY. Every match created is on the audit trail "
        "(`mammamia admin log`).",
    )
    msub = p.add_subparsers(dest="match_command", metavar="ACTION", required=True)

    def common(q: argparse.ArgumentParser) -> None:
        add_call_flags(q)

    q = options.one_line_errors(
        msub.add_parser(
            "create",
            help="create a match; print its id and seat tokens as JSON",
            description="Create a match of --players seats and print one JSON line: "
            '{"match": ID, "tokens": [...]}, one seat token per seat in seat order. Give each '
            "token to one bot (`mammamia bot SPEC --token TOKEN`); the match starts once every "
            "seat has joined. With --places, the match starts at once on those places (bots "
            'started with `mammamia bot SPEC --place`, docs/protocol.md "Places"). '
            "`mammamia watch ID` follows it.",
        )
    )
    common(q)
    q.add_argument("--players", type=int, required=True, help="2 to 5")
    q.add_argument(
        "--seed", type=options.seed, help="the game's seed, 0 to 2**63-1 (random when absent)"
    )
    q.add_argument(
        "--deadline",
        type=options.deadline_s,
        metavar="SEC",
        help="per-decision deadline in seconds, 0.001 to "
        f"{options.MAX_DEADLINE_MS // 1000} (server default when absent)",
    )
    q.add_argument(
        "--time-bank",
        type=options.time_bank_s,
        default=0.0,
        metavar="SEC",
        help="time bank per seat in seconds, up to "
        f"{options.MAX_TIME_BANK_MS // 1000} (default none)",
    )
    q.add_argument("--names", metavar="A,B,...", help="display names per seat")
    q.add_argument(
        "--places",
        metavar="P,Q,...",
        help="the place tokens to seat the match on, one per seat in seat order",
    )
    q.set_defaults(func=_create)
    q = msub.add_parser(
        "record",
        help="print a match's game record (JSON)",
        description="Print the game record (JSON, RECORD.md) of match ID, "
        "so far for a running match. Save it to a file and `mammamia show "
        "FILE` prints the game as a log.",
    )
    common(q)
    q.add_argument("match_id", metavar="ID")
    q.set_defaults(func=_record)
    q = msub.add_parser(
        "list",
        help="list matches, newest first (JSON lines)",
        description="List the server's matches, newest first, one JSON "
        "object per line: id, status, players, names, when it was created and, "
        "once finished, the winners. Read a page at a time (docs/protocol.md, "
        "Paging).",
    )
    common(q)
    q.add_argument(
        "--limit",
        type=options.count,
        default=50,
        metavar="N",
        help="at most N matches (default 50; 0: every match)",
    )
    q.set_defaults(func=_list)


def _call(args: argparse.Namespace, method: str, request: Any) -> Any:
    """Returns the reply of the Organiser ``method`` to ``request``; raises CommandRefused
    when there is no key or the server refuses."""
    from mammamia_pb import arena_pb2_grpc

    return call(args, arena_pb2_grpc.OrganiserStub, method, request)


_guard = guarded(lambda args: f"mammamia match {args.match_command}")


@_guard
def _create(args: argparse.Namespace) -> int:
    from . import cli_wire

    names = [n.strip() for n in args.names.split(",")] if args.names else []
    places = [p.strip() for p in args.places.split(",")] if args.places else []
    req = cli_wire.create_request(
        args.players,
        seed=args.seed,
        deadline_s=args.deadline,
        time_bank_s=args.time_bank,
        names=names,
        places=places,
    )
    print(json.dumps(cli_wire.created(_call(args, "CreateMatch", req))))
    return 0


@_guard
def _record(args: argparse.Namespace) -> int:
    from . import cli_wire

    resp = _call(args, "GetRecord", cli_wire.record_request(args.match_id))
    print(resp.json)
    return 0


@_guard
def _list(args: argparse.Namespace) -> int:
    from . import cli_wire
    from .paging import MAX_PAGE_SIZE, follow

    size = min(args.limit or MAX_PAGE_SIZE, MAX_PAGE_SIZE)

    def read(token: str) -> tuple[Sequence[Any], str]:
        resp = _call(args, "ListMatches", cli_wire.list_request(size, token))
        return resp.matches, resp.next_page_token

    for m in follow(read, args.limit or None):
        print(json.dumps(cli_wire.summary_data(m)))
    return 0
