"""`python -m harness` and the `harness` command (pyproject `[project.scripts]`). SIGINT and
SIGTERM are taken from this function's first instruction, before the command line's imports
(pandas, pyarrow, rich: seconds on a loaded machine); all that loads before it is the package
itself and its signal handling (`harness.interrupts`), each kept small. A signal during the
imports stops the command once they are done (an import cut short leaves a module half made,
whose exit hooks then fail), with one line and 128 + the signal, never a traceback nor a silent
death; `harness.cli.main` goes on with the same handler and what it noted."""

from __future__ import annotations

import sys

from harness import interrupts


def main() -> int:
    """The command line of this process; its exit code."""
    interrupts.install()
    try:
        from harness.cli import main as command  # the heavy imports

        interrupts.poll()
        return command()
    except KeyboardInterrupt as e:  # before the command line took the signals over
        return interrupts.said_at_start_up(e)


if __name__ == "__main__":
    sys.exit(main())
