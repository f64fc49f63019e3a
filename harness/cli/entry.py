"""`harness`: the command line parsed, its command run, and what went wrong turned into an exit
code (`harness.cli.exits`) with one line; signals taken for the whole of it."""

from __future__ import annotations

import os
import sys

from rich.console import Console

from harness import interrupts, testing_signals
from harness.cli.exits import THRESHOLD_FAILED, WRITE_FAILED, printable
from harness.cli.parser import COMMANDS, parse_args
from harness.config import ConfigError
from harness.engines.ray_setup import ray_scope
from harness.results.failures import InvariantError, ResultsError, WriteFailed

PIPED_WIDTH = 150
"""Columns of output written to a pipe or a file when `COLUMNS` does not say: the tables'
width, rather than rich's 80."""


def _command(argv: list[str] | None, console: Console) -> int:
    try:
        args = parse_args(argv)
        if args is None:
            return 0
        return COMMANDS[args.command].act(args, console)
    except (ConfigError, ResultsError) as e:
        print(f"harness: error: {printable(str(e))}", file=sys.stderr)
        return 2
    except WriteFailed as e:
        print(f"harness: error: {printable(str(e))}", file=sys.stderr)
        return WRITE_FAILED
    except InvariantError as e:
        print(f"harness: {printable(str(e))}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """The command line `argv` (else the process's). A signal stops the command where it polls
    (`harness.interrupts`); one after the command has finished is only counted: the exit code
    is decided by then, and a command that succeeded exits with 128 + the signal."""
    with interrupts.taken(restore=argv is not None):
        try:
            console = Console()
            if not console.is_terminal and not os.environ.get("COLUMNS", "").strip().isdigit():
                # piped, and no width asked for (rich reads COLUMNS itself): room for the tables
                # rather than 80 columns
                console.width = PIPED_WIDTH
            with ray_scope():  # a Ray the command started is stopped before it returns
                try:
                    code = _command(argv, console)
                finally:
                    interrupts.shield()
                    testing_signals.at("shutdown")
        except KeyboardInterrupt as e:  # outside a run (a run says what it kept itself)
            print(f"harness: {interrupts.word(e)}", file=sys.stderr)
            return interrupts.exit_code(e)
        if interrupts.first() is not None and code in (0, THRESHOLD_FAILED):
            # while Ray stopped, after the command was done: the run's own result stands
            print(f"harness: {interrupts.word()}", file=sys.stderr)
            code = interrupts.exit_code()
        testing_signals.at("done")
        return code
