"""Asks a local ``mammamia serve`` whether it serves: exit 0 when SERVING, else 1.

The container's health check (Dockerfile ``HEALTHCHECK``), over the standard gRPC
health protocol (``grpc.health.v1``, service ""): NOT_SERVING while the server is
starting, draining, or cannot write to its database (docs/operations.md).

It reads the server's own variables: ``MAMMAMIA_PORT`` (default 50051) and, for a
TLS server, ``MAMMAMIA_TLS_CERT``; the certificate is checked against
``MAMMAMIA_TLS_CA`` when set, else against the server's own chain (enough for a
self-signed certificate), for the name ``MAMMAMIA_HEALTHCHECK_NAME`` (default
``localhost``). ``MAMMAMIA_HEALTHCHECK_ADDRESS`` overrides ``127.0.0.1:PORT``.
"""

from __future__ import annotations

import os
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

TIMEOUT_S = 3.0


def channel() -> grpc.Channel:
    """Returns a channel to the server, with TLS when the server serves TLS."""
    port = os.environ.get("MAMMAMIA_PORT", "")
    if not port.isdigit() or port == "0":  # unset, or not a port number the server took
        port = "50051"
    address = os.environ.get("MAMMAMIA_HEALTHCHECK_ADDRESS") or f"127.0.0.1:{port}"
    cert = os.environ.get("MAMMAMIA_TLS_CERT")
    if not cert:
        return grpc.insecure_channel(address)
    with open(os.environ.get("MAMMAMIA_TLS_CA") or cert, "rb") as f:
        roots = f.read()
    name = os.environ.get("MAMMAMIA_HEALTHCHECK_NAME") or "localhost"
    return grpc.secure_channel(
        address,
        grpc.ssl_channel_credentials(roots),
        options=[("grpc.ssl_target_name_override", name)],
    )


def main() -> int:
    try:
        with channel() as ch:
            reply = health_pb2_grpc.HealthStub(ch).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=TIMEOUT_S
            )
    except grpc.RpcError as e:
        print(f"health: {e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"health: {e}", file=sys.stderr)
        return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(f"health: {status}")
    return 0 if reply.status == health_pb2.HealthCheckResponse.SERVING else 1


if __name__ == "__main__":
    sys.exit(main())
