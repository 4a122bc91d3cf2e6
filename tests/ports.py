"""Ports for servers that a test stops and starts again on the same address.

A port the system hands out for ``bind(0)`` comes from its ephemeral range, which it
also hands to every outgoing connection and to every other ``bind(0)`` on the
machine: while a test's server is down (killed, restarting), another test's client
or server may be given its port, and the restart fails with "the port is taken". A
port below the ephemeral range is never handed out that way, so only a test that
names it could take it; each pytest-xdist worker picks from a band of its own.
"""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

_BAND = 1500
_FIRST = 10000


def _ephemeral_start() -> int:
    """Returns the first port of the system's ephemeral range (32768 where unknown)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_given: set[int] = set()  # handed out by this process: two servers never get one port


def restartable_port() -> int:
    """Returns a port on 127.0.0.1 that is free now, below the ephemeral range, from
    this xdist worker's band (``gw0``: the first) and not handed out before by this
    process (until the band runs out); raises RuntimeError if none is free."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    bands = max(1, (_ephemeral_start() - _FIRST) // _BAND)
    first = _FIRST + _BAND * ((int(worker) if worker.isdigit() else 0) % bands)
    band = range(first, first + _BAND)
    if _given.issuperset(band):
        _given.difference_update(band)
    candidates = [port for port in band if port not in _given]
    random.shuffle(candidates)
    for port in candidates:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _given.add(port)
        return port
    raise RuntimeError(f"no free port in {first}-{first + _BAND - 1} for worker {worker!r}")
