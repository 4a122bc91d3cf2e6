"""``mammamia hosts``: the hosts that share a PostgreSQL database, their leases, and
the release of a dead host's matches by hand (``server.db.hosts``, ``server.leases``).

Like ``mammamia ladder rerate``, these commands work on the database itself
(``--db``): whoever may open the database is the organiser here. ``release`` logs
what it did, who asked and why (``host_released``), for the audit.
"""

from __future__ import annotations

import argparse
import getpass
import json
import socket
import sys
import time
from typing import TYPE_CHECKING

from .options import env

if TYPE_CHECKING:
    from .db.hosts import HostRow, Hosts


def register_hosts(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds the ``hosts`` command (list, release)."""
    p = sub.add_parser(
        "hosts",
        help="the hosts sharing a PostgreSQL database: leases, and releasing a dead one",
        description="The hosts that share one PostgreSQL database (docs/deploy.md, "
        "'When a host goes away'). These commands open the database itself: "
        "whoever may open it is the organiser here.",
    )
    cmds = p.add_subparsers(dest="hosts_command", metavar="ACTION", required=True)

    def db(q: argparse.ArgumentParser) -> None:
        q.add_argument(
            "--db",
            default=env("MAMMAMIA_DB"),
            required=env("MAMMAMIA_DB") is None,
            metavar="URL",
            help="the hosts' database, a postgresql:// URL (MAMMAMIA_DB)",
        )

    listing = cmds.add_parser(
        "list",
        help="list the hosts, their addresses, leases and unfinished matches",
        description="List every host that holds or held a lease: its host id, the "
        "address it advertises, whether its lease is live, lapsed or released, "
        "and how many of its matches have not ended.",
    )
    db(listing)
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.set_defaults(func=_list)
    release = cmds.add_parser(
        "release",
        help="hand a dead host's unfinished matches to a live host now",
        description="Mark HOST's lease released: the first live host to beat takes "
        "its unfinished matches over (resumed from their journal, their bots told "
        "where to play), without waiting for the lease to lapse. Refused for a "
        "host whose lease is live, unless --force (its writes for those matches are "
        "then refused; restart it).",
    )
    db(release)
    release.add_argument("host", metavar="HOST", help="the host id (--host-id) to release")
    release.add_argument(
        "--reason", required=True, help="why, for the log (e.g. 'node lost in the outage')"
    )
    release.add_argument(
        "--force", action="store_true", help="release a host even though its lease is live"
    )
    release.set_defaults(func=_release)


def lease_state(row: HostRow, now: float) -> str:
    """Returns how ``row``'s lease stands at ``now``: live, lapsed or released."""
    if row.expires <= 0:
        return "released"
    return "live" if row.live(now) else "lapsed"


def _open(args: argparse.Namespace, command: str) -> tuple[Hosts | None, int]:
    """Returns the open hosts table, or None and the exit status after saying why."""
    from .db.connection import ERRORS, is_url, shown
    from .db.hosts import Hosts
    from .db.schema import SchemaError, revision

    if not is_url(args.db):
        print(
            f"mammamia hosts {command}: --db {shown(args.db)!r}: hosts share a PostgreSQL "
            "database (a postgresql:// URL); an SQLite file has one host",
            file=sys.stderr,
        )
        return None, 2
    failures: tuple[type[Exception], ...] = (*ERRORS, SchemaError)
    try:
        if revision(args.db) is None:
            raise SchemaError("no server has used this database yet")
        return Hosts(args.db), 0
    except failures as e:
        print(f"mammamia hosts {command}: --db {shown(args.db)!r}: {e}", file=sys.stderr)
        return None, 2


def _list(args: argparse.Namespace) -> int:
    from .db.connection import ERRORS, shown

    hosts, status = _open(args, "list")
    if hosts is None:
        return status
    try:
        rows = hosts.hosts()
    except ERRORS as e:
        print(f"mammamia hosts list: --db {shown(args.db)!r}: {e}", file=sys.stderr)
        return 2
    finally:
        hosts.close()
    now = time.time()
    listed = [
        {
            "host": r.host,
            "address": r.address,
            "lease": lease_state(r, now),
            "expires_in_s": round(r.expires - now, 1) if r.expires > 0 else None,
            "renewed_s_ago": round(now - r.renewed, 1),
            "unfinished": r.unfinished,
        }
        for r in rows
    ]
    if args.json:
        print(json.dumps(listed, indent=2))
        return 0
    if not listed:
        print("no host has held a lease on this database")
        return 0
    table = [("HOST", "ADDRESS", "LEASE", "RENEWED", "UNFINISHED")] + [
        (
            str(h["host"]),
            str(h["address"]),
            str(h["lease"]),
            f"{h['renewed_s_ago']} s ago",
            str(h["unfinished"]),
        )
        for h in listed
    ]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


def _release(args: argparse.Namespace) -> int:
    import structlog

    from .db.connection import ERRORS, shown
    from .db.hosts import HostRefusedError

    hosts, status = _open(args, "release")
    if hosts is None:
        return status
    now = time.time()
    try:
        row = hosts.release(args.host, now, args.force)
    except HostRefusedError as e:
        print(f"mammamia hosts release: {e}", file=sys.stderr)
        return 1
    except ERRORS as e:
        print(f"mammamia hosts release: --db {shown(args.db)!r}: {e}", file=sys.stderr)
        return 2
    finally:
        hosts.close()
    was = lease_state(row, now)
    structlog.get_logger().warning(
        "host_released",
        host=row.host,
        lease=was,
        forced=args.force,
        unfinished=row.unfinished,
        reason=args.reason,
        by=f"{getpass.getuser()}@{socket.gethostname()}",
    )
    print(
        f"released host {row.host!r} (its lease was {was}): its {row.unfinished} "
        "unfinished matches go to the first live host to beat (within a third of a lease)"
    )
    return 0
