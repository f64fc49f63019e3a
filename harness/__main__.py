"""`python -m harness` and the `harness` command (pyproject `[project.scripts]`). SIGINT and
SIGTERM are taken from this function's first instruction, before the command line's imports
(pandas, pyarrow, rich: seconds on a loaded machine): a signal at any moment of start-up ends
the command with one line and 128 + the signal, never a traceback nor a silent death.
`harness.cli.main` then puts its own handlers in their place."""

from __future__ import annotations

import signal
import sys

from harness.running.interrupts import Interrupted, exit_code

_caught: list[int] = []


def _stop(signum: int, frame: object) -> None:
    """Stop the start-up at once; the signal is kept as well, for an import that swallows
    the exception (one did, now and then: the command then ran on as if never signalled)."""
    _caught.append(signum)
    raise Interrupted(signum)


def main() -> int:
    """The command line of this process; its exit code."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stop)
    try:
        from harness.cli import main as command  # the heavy imports

        if _caught:
            raise Interrupted(_caught[0])
        return command()
    except KeyboardInterrupt as e:  # before the command line took the signals over
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)  # a second one cuts nothing now
        word = "terminated" if getattr(e, "signum", None) == signal.SIGTERM else "interrupted"
        print(f"harness: {word}; nothing was run", file=sys.stderr)
        return exit_code(e)


if __name__ == "__main__":
    sys.exit(main())
