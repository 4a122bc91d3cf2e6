"""A ladder client that enters again whatever the server says, and leaves SIGTERM
to kill it: what the conformance kit's ``ladder-key``, ``ladder-replaced`` and
``ladder-enter`` scenarios must fail.

    python reenterer.py --server HOST:PORT --name NAME --key-file FILE

It registers the name when the key file is absent (writing the key there, mode
0600), then calls ``Ladder.Enter`` five times in a row, whether the server refuses
its key (PERMISSION_DENIED) or a newer entry of its name replaces its own
(ALREADY_EXISTS), and exits 1. It plays no assignment.
"""

from __future__ import annotations

import argparse
import os
import sys

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as rpc

TRIES = 5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--key-file", required=True)
    args = parser.parse_args()
    with grpc.insecure_channel(args.server) as channel:
        ladder = rpc.LadderStub(channel)
        if not os.path.exists(args.key_file):
            key = ladder.Register(pb.RegisterRequest(name=args.name), timeout=10).key
            fd = os.open(args.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, key.encode())
            os.close(fd)
        with open(args.key_file, encoding="utf-8") as f:
            key = f.read().strip()
        for _ in range(TRIES):
            try:
                for _assignment in ladder.Enter(
                    pb.EnterRequest(name=args.name), metadata=(("bot-key", key),)
                ):
                    pass
            except grpc.RpcError as e:
                print(f"reenterer: Enter: {e.code().name}", file=sys.stderr, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
