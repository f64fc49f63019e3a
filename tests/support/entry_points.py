"""Plugins of other packages hidden: the registries see this project's own entry points only."""

from __future__ import annotations

import functools
import re
import tomllib
from importlib import metadata
from typing import Any

from tests.support.configs import CONFIGS

PROJECT = tomllib.loads((CONFIGS.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
"""This project's [project] table: its distribution's name."""


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def own_entry_points(**select: Any) -> metadata.EntryPoints:
    """`importlib.metadata.entry_points(**select)` less those other installed distributions
    declare: what the registries find in a test process (tests/conftest.py), so that a plugin
    installed beside the harness (the README's example one) changes no test."""
    return _own(tuple(sorted(select.items())))


@functools.cache
def _own(select: tuple[tuple[str, Any], ...]) -> metadata.EntryPoints:
    """`own_entry_points`, read once per selection: reading every installed distribution's
    metadata is most of a short `harness.cli.main` (each builds its parser from the
    registries), and what is installed does not change while the tests run (the example
    plugin package is installed apart, for processes of its own)."""
    own = _normal(PROJECT["name"])
    return metadata.EntryPoints(
        ep
        for ep in metadata.entry_points(**dict(select))
        if ep.dist is not None and _normal(ep.dist.name) == own
    )
