"""`python -m harness.cli`: the command line, as `harness` (`python -m harness` also takes the
signals before the command line's imports)."""

import sys

from harness.cli import main

sys.exit(main())
