"""`harness plugins`: every name a config can give a plugin, and where it comes from."""

from __future__ import annotations

import argparse

from rich.console import Console

from harness.api import AXES
from harness.cli.command import Command
from harness.external import SCHEDULER
from harness.model.catalogue import Listed

LISTED: tuple[Listed, ...] = (*AXES, SCHEDULER)
"""What `harness plugins` lists: every axis's registry, then the choices a config makes by a
section of its own."""


def _act(args: argparse.Namespace, console: Console) -> int:
    """One line per plugin under a header: its kind, its name, and where it comes from (the
    package, or an installed entry point's "module:Class")."""
    print(f"{'KIND':<10} {'NAME':<20} FROM")
    for listed in LISTED:
        for kind, name, source in listed.catalogue():
            print(f"{kind:<10} {name:<20} {source}")
    return 0


COMMAND = Command(
    "plugins", "list every placement plugin and strategy available", _act, example="harness plugins"
)
