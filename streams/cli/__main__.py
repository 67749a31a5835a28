"""`python -m streams.cli` is `river-cw`."""

import sys

from streams.cli import main

sys.exit(main())
