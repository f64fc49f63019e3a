"""`harness plugins`: every name a config can give a plugin, and where it comes from."""

from __future__ import annotations

import argparse

from rich.console import Console

from harness.cli.command import Command
from harness.config.traces import TRACE_FORMATS
from harness.engines import ENGINES
from harness.external import SCHEDULER
from harness.model.catalogue import Listed, catalogue

LISTED: tuple[Listed, ...] = (ENGINES, TRACE_FORMATS, SCHEDULER)
"""What is listed after the model's registries: the registries of the layers above it, then
the choices declared there."""


def _act(args: argparse.Namespace, console: Console) -> int:
    """One line per plugin under a header: its kind, its name, and where it comes from (the
    package, or an installed entry point's "module:Class")."""
    print(f"{'KIND':<10} {'NAME':<20} FROM")
    for kind, name, source in catalogue(*LISTED):
        print(f"{kind:<10} {name:<20} {source}")
    return 0


COMMAND = Command(
    "plugins", "list every placement plugin and strategy available", _act, example="harness plugins"
)
