"""A ladder's standings as the commands show them: fetched from a server (computed
there, by ``server.ladder.standings``), laid out as a table, with the command that
puts a newcomer's bot on that ladder.

Shared by ``mammamia ladder standings`` and ``mammamia demo``; grpc and the wire
messages are imported when the standings are fetched, so importing this is cheap.
"""

from __future__ import annotations

from typing import Any

HEADER = (
    "rank",
    "name",
    "version",
    "rating",
    "mu",
    "sigma",
    "interval",
    "p>next",
    "games",
    "wins",
    "pizzas",
)


def fetch_standings(
    server: str, players: int = 0, timeout: float = 10.0, by: str = "best"
) -> dict[str, Any]:
    """Returns ``{"matches_finished": N, "by": "best"|"newest", "standings": [...],
    "leagues": [...], "moves": [...]}`` from a server's ladder, each bot by its ``by``
    version, every page of it (``matches_finished``, ``by``, ``leagues`` and ``moves``
    as the first page says; an older server that knows no versions says "best", one
    without leagues sends none).

    Raises grpc.RpcError when the server cannot be reached or refuses.
    """
    import grpc

    from mammamia_pb import arena_pb2_grpc as pb_grpc

    from ..paging import follow
    from . import cli_wire

    first: dict[str, Any] = {}

    with grpc.insecure_channel(server) as channel:
        stub = pb_grpc.LadderStub(channel)

        def read(token: str) -> tuple[list[dict[str, Any]], str]:
            data = cli_wire.standings_data(
                stub.Standings(cli_wire.standings_request(players, token, by), timeout=timeout)
            )
            first.setdefault("matches_finished", data["matches_finished"])
            first.setdefault("by", data["by"])
            first.setdefault("leagues", data["leagues"])
            first.setdefault("moves", data["moves"])
            return data["standings"], data["next_page_token"]

        lines = list(follow(read))
    return {
        "matches_finished": first["matches_finished"],
        "by": first["by"],
        "standings": lines,
        "leagues": first["leagues"],
        "moves": first["moves"],
    }


def standings_table(data: dict[str, Any]) -> list[str]:
    """Returns the standings as aligned text lines (a header line first), with a
    league column on a ladder with leagues."""
    leagues = bool(data.get("leagues"))
    header = (*HEADER[:2], "league", *HEADER[2:]) if leagues else HEADER
    rows = [header]
    for s in data["standings"]:
        better = s.get("p_better")
        league = (s.get("league") or "-",) if leagues else ()
        rows.append(
            (
                str(s["rank"]),
                s["name"] + (" (suspended)" if s.get("suspended") else ""),
                *league,
                (s.get("version") or "-")
                + (f" (of {s['versions']})" if s.get("versions", 1) > 1 else ""),
                f"{s['rating']:.2f}",
                f"{s['mu']:.2f}",
                f"{s['sigma']:.2f}",
                f"{s['low']:.1f}..{s['high']:.1f}",
                "" if better is None else f"{better:.2f}",
                str(s["games"]),
                str(s["wins"]),
                f"{s['mean_delivered']:.2f}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    left = (1, 2, 3) if leagues else (1, 2)
    return [
        "  ".join(
            cell.ljust(w) if i in left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def connect_command(server: str) -> str:
    """Returns the command that puts a newcomer's own bot on the server's ladder."""
    return f"mammamia bot path/to/my_bot.py:MyBot --server {server} --ladder --name my-bot"


def leagues_lines(data: dict[str, Any]) -> list[str]:
    """Returns the ladder's leagues (lowest first, each with its boss) and its latest
    moves between them as text lines; none on a ladder without leagues."""
    import datetime

    if not data.get("leagues"):
        return []
    out = [
        "leagues: "
        + " < ".join(
            f"{g['name']} (boss {g['boss']}: {g['bot']})" if g.get("boss") else g["name"]
            for g in data["leagues"]
        )
    ]
    for m in data.get("moves") or ():
        at = datetime.datetime.fromtimestamp(m["at"], datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
        out.append(f"moved {at} UTC: {m['name']} {m['from']} -> {m['to']}: {m['why']}")
    return out
