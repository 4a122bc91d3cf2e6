"""A competition as part of ``mammamia serve``: ``--competition FILE``.

The ladder's extension (``server.ladder.serve``) calls :func:`add_arguments` and,
when a file is given, :func:`install` with its ladder, before the ladder settles
what a restart cut off (so that a finals match cut off is never settled as a
ladder match). Kept light: the service and grpc are imported by ``install`` only.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..options import checked, env_default
from .config import Competition, CompetitionFileError, load

if TYPE_CHECKING:
    from ..app import Arena
    from ..ladder.ladder import Ladder


@checked
def _competition(text: str) -> Competition:
    try:
        return load(text)
    except CompetitionFileError as e:
        raise ValueError(str(e)) from None


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """Adds ``--competition FILE`` to the ladder's ``serve`` flags."""
    group.add_argument(
        "--competition",
        type=_competition,
        default=env_default("MAMMAMIA_COMPETITION", "") or None,
        metavar="FILE",
        help="run the competition this TOML file declares: its phases on schedule, "
        "its finals, its results held until released (docs/competitions.md; "
        "MAMMAMIA_COMPETITION)",
    )


def adjust(args: argparse.Namespace) -> None:
    """Applies the competition file's player counts and decision deadline to the
    ladder's flags (the file rules where it says something)."""
    competition: Competition | None = args.competition
    if competition is None:
        return
    args.ladder_players = competition.players
    if competition.decision_ms:
        args.ladder_deadline_ms = competition.decision_ms


def install(arena: Arena, args: argparse.Namespace, ladder: Ladder) -> None:
    """Registers the competition's service and background task with the server;
    without ``--competition``, a service that says no competition runs here."""
    from mammamia_pb import arena_pb2_grpc as pb_grpc

    from ..db.competition import CompetitionStore
    from .playing import play_finals
    from .run import CompetitionRun
    from .service import CompetitionServicer

    competition: Competition | None = args.competition
    # The web page (server.web.serve, installed after the ladder) shows this run.
    args.competition_run = None
    if competition is None:
        idle = CompetitionServicer(None, arena.operators, arena.audit)
        arena.add_service(
            "mammamia.v1.Competition",
            lambda server: pb_grpc.add_CompetitionServicer_to_server(idle, server),
        )
        return
    store = CompetitionStore(arena.storage.path)
    run = CompetitionRun(
        competition,
        store,
        ladder,
        host_id=arena.storage.host_id,
        advertise=lambda: arena.advertise,
        play=play_finals,
    )
    run.recover()
    args.competition_run = run
    servicer = CompetitionServicer(run, arena.operators, arena.audit)
    arena.add_service(
        "mammamia.v1.Competition",
        lambda server: pb_grpc.add_CompetitionServicer_to_server(servicer, server),
    )
    arena.add_task(run.run)
    arena.watch_storage(run.writer)
