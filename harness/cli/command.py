"""What a `harness` command is: its name, its help, what it does, its own arguments and the
shared flags it takes (`harness.cli.flags.FLAGS`), and the example the reference shows. Each
command's module declares one (`COMMAND`); `harness.cli.parser.COMMANDS` lists them."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console

RUNS = "runnable"
"""An example the docs test runs (tests/project/test_docs.py); another says why it is not run."""


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """A command whose arguments are all shared flags, or that has none."""


@dataclass(frozen=True)
class Command:
    """One command: `harness NAME ...` runs `act(args, console)`, whose result is the exit code."""

    name: str
    help: str
    act: Callable[[argparse.Namespace, Console], int]
    arguments: Callable[[argparse.ArgumentParser], None] = _no_arguments
    """Adds the arguments of its own, before the shared `flags`."""
    flags: tuple[str, ...] = ()
    """The shared flags it takes (names in `FLAGS`), in the order its help lists them."""
    words: dict[str, str] = field(default_factory=dict)
    """What the shared flags' help says of this command (`{what}`, `{units}`, `{out}`)."""
    example: str = ""
    """A command line the reference shows under its description."""
    example_runs: str = RUNS
    """Whether the docs test runs `example` (RUNS), or why not ("not run: ...")."""
