"""What one client may hold of the server, and how often it may ask.

Every bound has a default here, a ``mammamia serve`` flag and an environment
variable (``server.cli``); ``docs/operations.md`` lists them. The connection
bounds are gRPC's own settings (:func:`server_options`); the call bounds are
kept by the servicers (streams per seat, the Play reply queue) and by the
per-address rates (:class:`Rates`, applied by ``server.guards``).

Kept light for the command line: the rate library is imported when rates are made.
"""

from __future__ import annotations

import contextlib
import resource
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import limits

DESCRIPTOR_RESERVE: Final = 128
"""Descriptors kept for the database, logs and the process itself, beyond connections."""

MAX_CONNECTIONS_CAP: Final = 100_000
"""The derived connection limit never exceeds this, whatever the descriptor limit."""


@dataclass(frozen=True, slots=True)
class Quotas:
    """The server's bounds (defaults as documented in ``docs/operations.md``).

    ``max_connections`` 0 means: the descriptor limit less DESCRIPTOR_RESERVE. Rates
    are ``limits`` notation, ``"N/second"``, ``"N/minute"``, ``"N per hour"``; an
    empty rate means no limit.
    """

    max_connections: int = 0
    idle_seconds: float = 120.0
    age_seconds: float = 4 * 3600.0
    age_grace_seconds: float = 600.0
    handshake_seconds: float = 10.0
    keepalive_seconds: float = 60.0
    streams_per_connection: int = 200
    pending_calls: int = 10_000
    streams_per_seat: int = 4
    reply_queue: int = 64
    register_rate: str = "20/minute"
    public_rate: str = "50/second"

    def connections(self, descriptors: int) -> int:
        """Returns the most connections to accept with ``descriptors`` file descriptors."""
        if self.max_connections:
            return self.max_connections
        return max(16, min(MAX_CONNECTIONS_CAP, descriptors - DESCRIPTOR_RESERVE))


def server_options(quotas: Quotas, descriptors: int) -> list[tuple[str, int]]:
    """Returns the gRPC server settings that keep ``quotas``' connection bounds."""
    ms = 1000
    return [
        ("grpc.max_allowed_incoming_connections", quotas.connections(descriptors)),
        ("grpc.max_connection_idle_ms", int(quotas.idle_seconds * ms)),
        ("grpc.max_connection_age_ms", int(quotas.age_seconds * ms)),
        ("grpc.max_connection_age_grace_ms", int(quotas.age_grace_seconds * ms)),
        ("grpc.server_handshake_timeout_ms", int(quotas.handshake_seconds * ms)),
        ("grpc.max_concurrent_streams", quotas.streams_per_connection),
        # New calls wait in gRPC's queue until the server takes them up, one at a time
        # per method; past the soft bound gRPC cancels new ones at random, certainly
        # past the hard one. A crowd of bots connecting at once (a ladder's restart)
        # queues thousands: gRPC's default of 1,000 would cancel some.
        ("grpc.server.max_pending_requests", quotas.pending_calls),
        ("grpc.server.max_pending_requests_hard_limit", 2 * quotas.pending_calls),
        # Pings find connections whose peer vanished (no FIN), so that their streams
        # and descriptors are freed; clients may ping as often as every 10 s.
        ("grpc.keepalive_time_ms", int(quotas.keepalive_seconds * ms)),
        ("grpc.keepalive_timeout_ms", 20 * ms),
        ("grpc.http2.min_ping_interval_without_data_ms", 10 * ms),
        ("grpc.keepalive_permit_without_calls", 1),
    ]


def descriptor_limit() -> int:
    """Returns this process's soft limit on open files."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else MAX_CONNECTIONS_CAP + DESCRIPTOR_RESERVE


def raise_descriptor_limit() -> int:
    """Raises this process's soft limit on open files to its hard limit; returns the
    limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        # Some sandboxes refuse even this; the soft limit then stays as it was.
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return descriptor_limit()


def check_rate(text: str) -> str:
    """Returns ``text`` when it is empty (no limit) or a rate ``limits`` reads, such as
    ``20/minute``; raises ValueError otherwise."""
    import limits

    if text.strip():
        try:
            limits.parse(text)
        except ValueError:
            raise ValueError("need a rate such as 20/minute or 50/second, or '' for none") from None
    return text.strip()


class Rates:
    """Per-address rates of calls, in a moving window (memory only, so fast enough
    to check on the event loop; an address's count expires with its window).

    ``kinds`` maps a kind of call (``"register"``, ``"public"``) to its rate.
    """

    def __init__(self, kinds: dict[str, str]) -> None:
        import limits.storage
        import limits.strategies

        self._items: dict[str, limits.RateLimitItem] = {
            kind: limits.parse(rate) for kind, rate in kinds.items() if rate
        }
        self._limiter = limits.strategies.MovingWindowRateLimiter(limits.storage.MemoryStorage())

    def refuse(self, kind: str, address: str) -> float | None:
        """Counts one call of ``kind`` from ``address``; returns None when it is within
        the rate, else the seconds until the next call would be."""
        item = self._items.get(kind)
        if item is None or self._limiter.hit(item, kind, address):
            return None
        stats = self._limiter.get_window_stats(item, kind, address)
        # The window's reset time is on the wall clock (the library's own).
        return max(0.0, stats.reset_time - time.time())

    def describe(self, kind: str) -> str:
        """Returns the rate of ``kind`` as text (``"20 per 1 minute"``)."""
        item = self._items.get(kind)
        return str(item) if item is not None else "unlimited"


def address_of(peer: str) -> str:
    """Returns the address part of a gRPC peer string (``ipv4:127.0.0.1:5000`` ->
    ``127.0.0.1``, ``ipv6:[::1]:5000`` -> ``::1``; ``unix:...`` as it is)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0] or rest
    if kind == "ipv6":
        host = rest.rpartition(":")[0] or rest
        return host.strip("[]")
    return peer
