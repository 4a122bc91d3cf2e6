"""The rules as a local gRPC service (``mammamia rules-serve``), for search bots in any
language: game states behind handles, legal options, actions, determinized samples
and playouts with the built-in policies (protos/mammamia/v1/rules.proto).

    errors      the errors of the calls, each one status
    states      the bounded table of states and the calls on them (no protobuf)
    policies    the built-in policies, found by entry point, and the playout loop
    wire        the one module here that builds and reads protobuf messages
    servicer    the grpc.aio servicer (thin: wire in, states, wire out)
    cli         the ``rules-serve`` command
"""
