"""``python -m cedarlite``: the command line (see :mod:`cedarlite.cli`)."""

import sys

from .cli import main

sys.exit(main())
