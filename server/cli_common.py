"""What the operators' commands share: the server and key flags, reading the key,
one call to the server, and a refusal printed as one line.

``mammamia match``, ``mammamia competition`` and ``mammamia admin`` call the server
as an operator: the key comes from ``--organiser-key`` (or ``--operator-key``),
``--organiser-key-file`` (or ``--operator-key-file``), or the variables
``MAMMAMIA_ORGANISER_KEY`` and ``MAMMAMIA_ORGANISER_KEY_FILE``, and goes to the
server as the ``organiser-key`` metadata, which names the operator (the organiser
or one of ``mammamia serve --operators FILE``). Kept light: grpc is imported by
:func:`call` only, so ``mammamia --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any, Final

from .options import env
from .quoting import quoted

#: The exit status of a command the server (or a missing key) refused.
EXIT_REFUSED: Final = 1
KEY_METADATA: Final = "organiser-key"
NO_KEY: Final = (
    "no operator key: set MAMMAMIA_ORGANISER_KEY or pass --organiser-key-file "
    "(or --operator-key-file)"
)


class Refused(Exception):
    """A command that cannot go on: no key, an unreadable key file, or the server's
    refusal (the message says which)."""


def add_call_flags(q: argparse.ArgumentParser, key_help: str = "") -> None:
    """Adds ``--server``, the key flags and ``--tls-ca`` to ``q``; ``key_help`` is
    added to the key flag's help."""
    q.add_argument(
        "--server",
        default=env("MAMMAMIA_SERVER", "127.0.0.1:50051"),
        metavar="ADDR",
        help="server address host:port (MAMMAMIA_SERVER, default 127.0.0.1:50051)",
    )
    key = q.add_mutually_exclusive_group()
    key.add_argument(
        "--organiser-key",
        "--operator-key",
        dest="organiser_key",
        default=env("MAMMAMIA_ORGANISER_KEY"),
        metavar="KEY",
        help="the organiser's or an operator's key (MAMMAMIA_ORGANISER_KEY)" + key_help,
    )
    key.add_argument(
        "--organiser-key-file",
        "--operator-key-file",
        dest="organiser_key_file",
        default=env("MAMMAMIA_ORGANISER_KEY_FILE"),
        metavar="PATH",
        help="read the key from the first line of PATH (MAMMAMIA_ORGANISER_KEY_FILE)",
    )
    q.add_argument(
        "--tls-ca",
        default=env("MAMMAMIA_TLS_CA"),
        metavar="FILE",
        help="connect with TLS, trusting this PEM CA (MAMMAMIA_TLS_CA)",
    )


def organiser_key(args: argparse.Namespace) -> str | None:
    """Returns the key given by flag, variable or file (None when none is); raises
    Refused when the file cannot be read or its first line is empty."""
    # The command line wins over the environment: a key file yields only to a key
    # given as --organiser-key (argparse refuses both flags at once).
    key_from_env = args.organiser_key == os.environ.get("MAMMAMIA_ORGANISER_KEY")
    if args.organiser_key_file and (not args.organiser_key or key_from_env):
        try:
            with open(args.organiser_key_file, encoding="utf-8") as f:
                key = f.readline().strip()
        except OSError as e:
            raise Refused(
                f"--organiser-key-file {quoted(args.organiser_key_file)}: {e.strerror}"
            ) from None
        if not key:
            raise Refused(
                f"--organiser-key-file {quoted(args.organiser_key_file)}: the first line is empty"
            )
        return key
    return str(args.organiser_key) if args.organiser_key else None


def call(
    args: argparse.Namespace,
    stub: Callable[[Any], Any],
    method: str,
    request: Any,
    *,
    key_required: bool = True,
) -> Any:
    """Returns the reply of ``method`` of the stub ``stub(channel)`` to ``request``,
    the key (when given) sent as the ``organiser-key`` metadata; raises Refused when
    a required key is missing or the server refuses the call."""
    import grpc

    key = organiser_key(args)
    if key_required and not key:
        raise Refused(NO_KEY)
    if args.tls_ca:
        with open(args.tls_ca, "rb") as f:
            channel = grpc.secure_channel(args.server, grpc.ssl_channel_credentials(f.read()))
    else:
        channel = grpc.insecure_channel(args.server)
    with channel:
        metadata = ((KEY_METADATA, key),) if key else ()
        try:
            return getattr(stub(channel), method)(request, timeout=30, metadata=metadata)
        except grpc.RpcError as e:
            hint = (
                f": is the server running at {args.server}?"
                if e.code() == grpc.StatusCode.UNAVAILABLE
                else ""
            )
            raise Refused(f"{e.code().name}: {e.details()}{hint}") from None


def guarded(
    command: Callable[[argparse.Namespace], str],
) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    """Returns a decorator: the command's Refused is printed on stderr as one line,
    after the command's name (``command(args)``, e.g. "mammamia match create"), and
    the command exits with EXIT_REFUSED."""

    def guard(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        def run(args: argparse.Namespace) -> int:
            try:
                return fn(args)
            except Refused as e:
                print(f"{command(args)}: {e}", file=sys.stderr)
                return EXIT_REFUSED

        run.__doc__ = fn.__doc__
        return run

    return guard
