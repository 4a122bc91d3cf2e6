"""A client that answers one decision and quits: what the conformance kit must fail.

    python quitter.py --server HOST:PORT --token TOKEN

It takes its seat on the Play stream, answers the first decision it is asked with
option 0, waits for the reply to that answer, then closes the stream and exits 0,
long before its match ends.
"""

from __future__ import annotations

import argparse
import queue
import sys
from collections.abc import Iterator

import grpc

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as rpc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", required=True)
    parser.add_argument("--token", required=True)
    args = parser.parse_args()
    metadata = (("seat-token", args.token),)
    outbox: queue.Queue[pb.PlayRequest | None] = queue.Queue()
    outbox.put(pb.PlayRequest(observe=pb.ObserveRequest()))

    def requests() -> Iterator[pb.PlayRequest]:
        while (request := outbox.get()) is not None:
            yield request

    with grpc.insecure_channel(args.server) as channel:
        seat = rpc.SeatStub(channel)
        seat.Join(pb.JoinRequest(name="quitter"), metadata=metadata, timeout=10)
        stream = seat.Play(requests(), metadata=metadata, timeout=30)
        answered = False
        for message in stream:
            for event in message.events:
                kind = event.WhichOneof("event")
                decision = (
                    event.snapshot.decision
                    if kind == "snapshot" and event.snapshot.HasField("decision")
                    else event.decision
                    if kind == "decision"
                    else None
                )
                if decision is not None and not answered:
                    outbox.put(
                        pb.PlayRequest(
                            act=pb.ActRequest(decision_id=decision.decision_id, option=0)
                        )
                    )
                    answered = True
                elif kind == "act_result":
                    outbox.put(None)
                    stream.cancel()
                    print("quitter: answered one decision, leaving", file=sys.stderr)
                    return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
