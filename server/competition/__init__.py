"""A competition on the ladder: a file declaring its phases and finals
(``config``), the phases run and stamped on a server (``run``), the finals played
(``playing``), its status (``view``), its gRPC service (``service``, ``wire``)
and its command (``cli``, ``cli_wire``). docs/competitions.md."""
