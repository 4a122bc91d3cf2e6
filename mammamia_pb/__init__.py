"""Generated gRPC code for the `mammamia.v1` wire contract (protos/mammamia/v1/).

Produced by `make proto` from the .proto files; never edit by hand.
"""
