"""The Admin service as part of ``mammamia serve``: installed with the ladder
(``server.ladder.serve``), whose lobby its switches hold. Kept light: grpc is
imported by :func:`install` only."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..app import Arena
    from ..ladder.ladder import Ladder


def install(arena: Arena, ladder: Ladder) -> None:
    """Applies the switches the database holds to ``ladder``, makes the operator's
    registration switch one of its registration checks, and registers the Admin
    servicer and the switches' reading loop with the server."""
    from mammamia_pb import admin_pb2_grpc as apb_grpc

    from .service import AdminServicer
    from .switches import Switches

    switches = Switches(arena.audit, ladder)
    switches.recover()
    # First: an operator's closing is named before a competition's phase.
    ladder.registration_checks.insert(0, switches.registration_closed)
    servicer = AdminServicer(arena.operators, arena.audit, switches)
    arena.add_service(
        "mammamia.v1.Admin", lambda server: apb_grpc.add_AdminServicer_to_server(servicer, server)
    )
    arena.add_task(switches.run)
