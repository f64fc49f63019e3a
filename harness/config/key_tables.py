"""Every config key with its default and help, for `harness keys` and the reference pages
(docs/gen_reference.py): one source, so the reference cannot drift from the schema."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, get_type_hints

from harness.config.sections import SECTIONS
from harness.config.validation import entry_class
from harness.model.cluster.faults import FAULT_KINDS, FaultSpec
from harness.model.registry import RegistryError
from harness.model.scheduling.placement.placement_keys import PlacementSpec
from harness.model.scheduling.placement.registries import with_settings


def _toml(value: Any) -> str:
    """A default as it would be written in a config file."""
    if value is None:
        return '"none"'
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tuple):
        return str(list(value))
    return str(value)


def _rows(prefix: str, cls: type) -> list[tuple[str, str, str]]:
    rows = []
    for f in fields(cls):
        if f.metadata.get("plugin_tables"):  # not a key: the plugins' tables (`plugin_keys_table`)
            continue
        default = f.default if f.default is not MISSING else f.default_factory()
        rows.append((f"{prefix}{f.name}", _toml(default), f.metadata.get("help", "")))
    return rows


def plugin_keys_table(installed: bool = True) -> list[tuple[str, str, str]]:
    """(`placement.<table>.<key>`, default, help) of every plugin's own settings: the built-in
    plugins', and the installed ones' unless not `installed` (the reference lists only what
    ships)."""
    plugins = with_settings(PlacementSpec(), installed)
    return [
        row
        for table, c in sorted(plugins.items())
        for row in _rows(f"placement.{table}.", c.Settings)
    ]


def defaults_table() -> list[tuple[str, str, str]]:
    """(dotted key, default, help) for every key: the reference comes from here."""
    return [row for section, cls in SECTIONS.items() for row in _rows(f"{section}.", cls)]


def entry_keys_table() -> list[tuple[str, str, str]]:
    """(key of an entry of a list of tables such as `workload.templates[].vcpu`, default,
    help), for the reference."""
    rows = []
    for section, cls in SECTIONS.items():
        for name, tp in get_type_hints(cls).items():
            entry = entry_class(tp)
            if entry is not None:
                rows += _rows(f"{section}.{name}[].", entry)
    return rows


def fault_keys_table(installed: bool = True) -> list[tuple[str, str, str]]:
    """(key of a `[[faults]]` entry, default, help): the common keys (`faults[].<key>`), then
    each kind's own (`faults[<kind>].<key>`, its `Settings`), the built-in kinds' and the
    installed ones' unless not `installed` (the reference lists only what ships)."""
    rows = _rows("faults[].", FaultSpec)
    names = list(FAULT_KINDS.builtins) + (list(FAULT_KINDS.installed()) if installed else [])
    for name in names:
        try:
            kind = FAULT_KINDS.resolve(name)
        except RegistryError:  # one that does not import is refused where it is named
            continue
        rows += _rows(f"faults[{name}].", kind.Settings)
    return rows
