"""The command line: every command (`COMMANDS`, one module each, in the order `harness --help`
lists them) and the parser made from their declarations."""

from __future__ import annotations

import argparse

import harness
from harness.cli import compare, keys, plugins, report, run, search, sweep, trace_import
from harness.cli.command import Command
from harness.cli.flags import FLAGS, Parser

COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        run.COMMAND,
        search.COMMAND,
        sweep.COMMAND,
        report.COMMAND,
        compare.COMMAND,
        plugins.COMMAND,
        trace_import.COMMAND,
        keys.COMMAND,
    )
}
"""Every command, by name."""


def parser() -> argparse.ArgumentParser:
    """The parser of `harness`: a subcommand per command, its own arguments and then the shared
    flags it takes."""
    top = Parser(
        prog="harness",
        description="Load-test harness for Best-of-K placement on stale node metrics.",
    )
    top.add_argument(
        "--version", action="version", version=f"harness {harness.__version__} ({harness.PATH})"
    )
    sub = top.add_subparsers(dest="command")
    for command in COMMANDS.values():
        p = sub.add_parser(command.name, help=command.help)
        command.arguments(p)
        for name in command.flags:
            FLAGS[name].add(p, command.words)
    return top


def parse_args(argv: list[str] | None) -> argparse.Namespace | None:
    """The command line, or a ConfigError saying what is wrong with it; None for `harness`
    alone, which has printed the usage (exit 0, as `--help`)."""
    top = parser()
    args = top.parse_args(argv)
    if args.command is None:
        top.print_help()
        return None
    return args
