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
    """Returns ``{"matches_finished": N, "by": "best"|"newest", "standings": [...]}``
    from a server's ladder, each bot by its ``by`` version, every page of it
    (``matches_finished`` and ``by`` as the first page says; an older server that
    knows no versions says "best").

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
            return data["standings"], data["next_page_token"]

        lines = list(follow(read))
    return {"matches_finished": first["matches_finished"], "by": first["by"], "standings": lines}


def standings_table(data: dict[str, Any]) -> list[str]:
    """Returns the standings as aligned text lines (a header line first)."""
    rows = [HEADER]
    for s in data["standings"]:
        better = s.get("p_better")
        rows.append(
            (
                str(s["rank"]),
                s["name"] + (" (suspended)" if s.get("suspended") else ""),
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
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    return [
        "  ".join(
            cell.ljust(w) if i in (1, 2) else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def connect_command(server: str) -> str:
    """Returns the command that puts a newcomer's own bot on the server's ladder."""
    return f"mammamia bot path/to/my_bot.py:MyBot --server {server} --ladder --name my-bot"
