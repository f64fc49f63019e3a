"""`harness keys`: every config key with its default and meaning."""

from __future__ import annotations

import argparse

from rich.console import Console

from harness.cli.command import Command


def _act(args: argparse.Namespace, console: Console) -> int:
    from harness.presentation.terminal import print_keys

    print_keys(console, markdown=args.markdown)
    return 0


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print rows of Markdown tables, as in the reference pages",
    )


COMMAND = Command(
    "keys",
    "list every config key with its default and meaning",
    _act,
    _arguments,
    example="harness keys --markdown",
)
