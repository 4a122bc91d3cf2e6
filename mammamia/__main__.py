"""``python -m mammamia``: the same as the ``mammamia`` command."""

import sys

from .cli import main

sys.exit(main())
