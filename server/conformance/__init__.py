"""The conformance kit for bot clients in any language (``mammamia conformance``).

``server.conformance.kit`` runs the scenarios against a client command on a server
it starts in-process; ``server.conformance.positions`` finds the mid-game positions
of the decision scenarios with the rules engine; ``server.conformance.proxy`` is the
TCP proxy that cuts a client's connection; ``server.conformance.cli`` is the command.
"""
