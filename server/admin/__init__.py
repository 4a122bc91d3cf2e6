"""Operating a running ladder: the Admin service (``mammamia.v1.Admin``), the
server's switches, and the ``mammamia admin`` commands (docs/operating.md)."""
