"""Every config key with its default and help, for the README's tables: one source, so the
reference cannot drift from the schema."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

from harness.config.schema import SECTIONS
from harness.faults import FaultSpec


def _toml(value: Any) -> str:
    """A default as it would be written in a config file."""
    if value is None:
        return '"none"'
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def defaults_table() -> list[tuple[str, str, str]]:
    """(dotted key, default, help) for every key: the README's reference comes from here."""
    rows = []
    for section, cls in SECTIONS.items():
        for f in fields(cls):
            default = f.default if f.default is not MISSING else f.default_factory()
            rows.append((f"{section}.{f.name}", _toml(default), f.metadata["help"]))
    return rows


def fault_keys_table() -> list[tuple[str, str, str]]:
    """(key of a `[[faults]]` entry, default, help), for the README."""
    return [(f"faults[].{f.name}", _toml(f.default), f.metadata["help"]) for f in fields(FaultSpec)]
