"""The server process: ``create_server`` wires the services, health, reflection and
the drain on SIGTERM around one ``Runners``.

Extensions (the ladder) plug in here. ``create_server(..., extensions=[install])``
calls each ``install(arena)`` before the server starts; ``install`` may:

- ``arena.add_service(name, register)``: ``register(grpc_server)`` adds a servicer
  (e.g. ``arena_pb2_grpc.add_LadderServicer_to_server``); ``name`` (e.g.
  ``"mammamia.v1.Ladder"``) is listed by reflection and health;
- ``arena.add_task(factory)``: ``factory()`` returns a coroutine started once the
  server is serving and cancelled when it drains (after no new match can start);
- use ``arena.runners`` (create matches and await their results, see ``server.runners``),
  ``arena.storage`` (the SQLite database: ``.path``, ``.connect()``, ``.writer``),
  ``arena.draining``, ``arena.organiser_key``, ``arena.operators`` (who a call's key
  names: ``server.services.checked_operator``), ``arena.audit`` (the audit trail
  every operator's change is appended to, and the server's switches) and
  ``arena.metrics`` (``server.metrics``: counters to count on, and ``on_scrape`` for
  an extension's gauges).

``mammamia serve`` finds extensions through the entry-point group
``mammamia.server``: each entry point names an object (a module is fine) with
``add_arguments(parser)`` (the extension's own ``serve`` flags, optional) and
``install(arena, args)`` (called with the parsed arguments).
"""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from . import services
from .audit import Audit
from .clock import Clock
from .db.admin import AdminStore
from .db.connection import ERRORS, StorageError, is_url
from .db.matches import Storage
from .db.writer import Writer
from .guards import Guards
from .leases import DEFAULT_LEASE_S, Leases
from .match import DEFAULT_DEADLINE_MS
from .metrics import Metrics
from .operators import Operators
from .quotas import Quotas, Rates, descriptor_limit, server_options
from .runners import Runners
from .status import MatchStatus

log = structlog.get_logger()

MAX_MESSAGE_BYTES = 1 << 20  # requests are small; a record fits easily
MAX_SEND_BYTES = 16 << 20


@dataclass
class Arena:
    """What one server process holds, handed to extensions."""

    runners: Runners
    storage: Storage
    organiser_key: str
    server: grpc.aio.Server
    health: HealthServicer
    #: Who may make organiser and admin calls (the organiser key among them).
    operators: Operators
    #: The audit trail and the server's switches.
    audit: Audit
    #: The address this server gives bots entered through other hosts (HOST:PORT).
    advertise: str = ""
    services: list[str] = field(default_factory=list)
    tasks: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    running: list[asyncio.Task[None]] = field(default_factory=list)
    drained: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    draining: bool = False
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    _setting: asyncio.Future[None] | None = None  # the latest health change in flight
    #: The writers whose failing writes make health NOT_SERVING (``watch_storage``).
    writers: list[Writer] = field(default_factory=list)
    #: This host's lease and takeovers on a shared database (None on an SQLite file).
    leases: Leases | None = None
    #: This server's Prometheus metrics (``server.metrics``; ``/metrics``).
    metrics: Metrics = field(default_factory=Metrics)

    def add_service(self, name: str, register: Callable[[grpc.aio.Server], None]) -> None:
        """Adds a servicer to the server (before it starts) under its full service name."""
        register(self.server)
        self.services.append(name)

    def add_task(self, factory: Callable[[], Awaitable[None]]) -> None:
        """Runs ``factory()`` in the background once serving; cancelled when draining."""
        self.tasks.append(factory)

    def on_drained(self, finish: Callable[[], Awaitable[None]]) -> None:
        """Awaits ``finish()`` when draining, once every match's record is stored and
        before the server stops: for an extension to store what the matches' ends
        mean to it."""
        self.drained.append(finish)

    def watch_storage(self, writer: Writer | None = None) -> None:
        """Makes health NOT_SERVING while the database's writes fail (those of the
        server's writer, or of ``writer``, an extension's own), and SERVING again once
        every watched writer's succeed (unless the server is draining). Call before
        ``start``, or from it for the server's writer."""
        watched = writer or self.storage.writer
        self.writers.append(watched)
        watched.timed = self.metrics.write_timer(watched.name)
        loop = asyncio.get_running_loop()

        def changed(failing: bool) -> None:  # on the writer thread
            loop.call_soon_threadsafe(self._storage_changed, failing)

        watched.watch(changed)

    def _storage_changed(self, failing: bool) -> None:
        if failing:
            log.error(
                "storage_failing",
                db=self.storage.name,
                hint="health is NOT_SERVING until a write succeeds",
            )
        else:
            log.info("storage_recovered", db=self.storage.name)
        if not self.draining:
            self._setting = asyncio.ensure_future(self._set_serving(not self._failing()))

    def _failing(self) -> bool:
        return any(writer.failing for writer in self.writers)

    async def _set_serving(self, serving: bool) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in ("", *self.services):
            await self.health.set(name, status)

    async def start(self) -> None:
        """Starts the server, then the extensions' background tasks."""
        await self.server.start()
        self.watch_storage()
        self.metrics.watch_collector()
        await self._set_serving(not self._failing())
        for factory in self.tasks:
            self.running.append(asyncio.ensure_future(factory()))

    async def drain(self, grace: float = 30.0) -> None:
        """Stops the server gracefully: health NOT_SERVING, no new matches, running
        matches finished within ``grace`` seconds or aborted, records stored, then stop."""
        if self.draining:
            await self.stopped.wait()
            return
        self.draining = True
        log.info("drain_started", grace=grace)
        await self._set_serving(False)
        self.runners.accepting = False
        for task in self.running:
            task.cancel()
        await asyncio.gather(*self.running, return_exceptions=True)
        await self.runners.drain(grace)
        for finish in self.drained:
            await finish()
        await self.server.stop(grace=1.0)
        await self.storage.writer.flush()  # every queued write, off the event loop
        self.storage.close()
        self.audit.close()
        if self.leases is not None:
            self.leases.close()
        if self.runners.journal is not None:
            self.runners.journal.close()
        self.metrics.close()
        log.info("drain_done")
        self.stopped.set()


def default_advertise(address: str, port: int) -> str:
    """Returns the address a server bound to ``address`` (``host:port``) on ``port``
    gives by default to bots entered through other hosts: its own host and port, the
    machine's name in place of a wildcard host (``0.0.0.0``, ``::``, empty)."""
    host = address.rpartition(":")[0].strip("[]")
    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostname()
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def create_server(
    address: str,
    *,
    db_path: str | Path,
    organiser_key: str,
    deadline_ms: int = DEFAULT_DEADLINE_MS,
    start_timeout: float = 30.0,
    credentials: grpc.ServerCredentials | None = None,
    extensions: Sequence[Callable[[Arena], None]] = (),
    clock: Clock | None = None,
    exclusive: bool = False,
    quotas: Quotas | None = None,
    host_id: str = "",
    advertise: str = "",
    lease: float = DEFAULT_LEASE_S,
    operators: Operators | None = None,
) -> tuple[Arena, int]:
    """Returns the arena (not yet started) and the bound port for ``address``
    (``host:port``; port 0 picks a free one). ``clock`` is the matches' clock (the
    wall clock when None). ``exclusive`` claims the database file for this process
    and checks its integrity first. ``quotas`` bound what clients may hold and ask
    (the defaults when None). ``host_id`` names this server among the hosts sharing a
    PostgreSQL database (its match rows carry it; see ``server.db.matches.Storage``), and
    ``advertise`` is the address at which the other hosts' bots reach it (kept in
    ``Arena.advertise`` for extensions: the ladder); on PostgreSQL the host holds a
    lease of ``lease`` seconds, renewed while it runs (``server.leases``).
    ``operators`` may make organiser and admin calls (None: the organiser alone,
    by ``organiser_key``). Raises
    StorageError for a damaged file or one another server claimed (on PostgreSQL:
    the same host id)."""
    quotas = quotas or Quotas()
    rates = Rates({"register": quotas.register_rate, "public": quotas.public_rate})
    server = grpc.aio.server(
        interceptors=[Guards(rates)],
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_SEND_BYTES),
            ("grpc.so_reuseport", 0),
            *server_options(quotas, descriptor_limit()),
        ],
    )
    # Bound first: the port (0 picks one) makes the default address and host id.
    if credentials is None:
        port = server.add_insecure_port(address)
    else:
        port = server.add_secure_port(address, credentials)
    if not host_id and not advertise and address.endswith(":0") and is_url(db_path):
        # Its matches are its host id's: with a new port at each start, a restarted host
        # would not find the matches it ran.
        log.warning(
            "host_id_from_a_free_port",
            port=port,
            hint="give --host-id (or --advertise) to resume matches after a restart",
        )
    advertise = advertise or default_advertise(address, port)
    host_id = host_id or advertise
    try:
        storage = Storage(db_path, host_id=host_id)
    except StorageError:
        await server.stop(None)
        raise
    if exclusive:
        try:
            storage.claim()
            storage.check()
        except StorageError:
            storage.close()
            await server.stop(None)
            raise
    try:
        # The audit trail's times are the matches' clock's, injected or the wall's.
        audit = Audit(AdminStore(db_path), clock.now if clock is not None else time.time)
    except BaseException:
        storage.close()
        await server.stop(None)
        raise
    adopted = storage.adopt()
    if adopted:
        log.info("matches_adopted", matches=adopted, host=host_id)
    metrics = Metrics()
    runners = Runners(
        storage, deadline_ms=deadline_ms, start_timeout=start_timeout, clock=clock, metrics=metrics
    )
    leases: Leases | None = None
    if storage.shared:
        # The lease first: no other host takes over the matches this one resumes.
        try:
            leases = Leases(storage, runners, lambda: advertise, lease=lease)
            leases.start()
        except ERRORS as e:
            if leases is not None:
                leases.close()
            storage.close()
            await server.stop(None)
            raise StorageError(f"{storage.name}: {e}") from e
    # Matches the journal holds go on where they were; the others a crash cut off
    # (started before the journal, or not replayable) are marked aborted.
    resumed = runners.resume()
    cut = storage.abort_unfinished("server stopped before the match ended")
    if runners.journal is not None:
        storage.reinstate(
            {
                m: MatchStatus.WAITING
                if runners.matches[m].match.status == MatchStatus.WAITING
                else MatchStatus.RUNNING
                for m in resumed
            }
        )
    cut = [m for m in cut if m not in resumed]
    if cut:
        log.warning("matches_aborted_at_start", matches=cut)
    # The asyncio servicer: its Watch streams end with the server (the threaded one's
    # would keep the process alive after a drain).
    health_servicer = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    arena = Arena(
        runners=runners,
        storage=storage,
        organiser_key=organiser_key,
        server=server,
        health=health_servicer,
        operators=operators or Operators(organiser_key),
        audit=audit,
        advertise=advertise,
        leases=leases,
        metrics=metrics,
    )
    if leases is not None:
        arena.add_task(leases.run)
    arena.services.extend(services.register(server, runners, arena.operators, quotas, arena.audit))
    arena.watch_storage(audit.writer)
    for install in extensions:
        install(arena)
    reflection.enable_server_reflection(
        (*arena.services, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    for name in ("", *arena.services):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    return arena, port


async def serve_until_signalled(arena: Arena, grace: float, started: bool = False) -> None:
    """Starts the arena (unless ``started``) and returns after SIGTERM or SIGINT has
    drained it."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if not started:
        await arena.start()
    await stop.wait()
    await arena.drain(grace)
