"""Scenario configuration: TOML in, validated dataclasses out.

`schema` declares the sections (the model's own specs, plus how a run is driven), `validate`
checks a raw dict against it, `load` reads files and `--set` overrides, `keys` lists every key
for the docs.
"""

from harness.config.reading import load, parse_override, parse_toml, with_thresholds
from harness.config.sections import SECTIONS, RayConfig, RunConfig
from harness.config.validation import (
    Config,
    ConfigError,
    check_folder_name,
    flatten,
    from_dict,
    thresholds_table,
)

__all__ = [
    "SECTIONS",
    "Config",
    "ConfigError",
    "RayConfig",
    "RunConfig",
    "check_folder_name",
    "flatten",
    "from_dict",
    "load",
    "parse_override",
    "parse_toml",
    "thresholds_table",
    "with_thresholds",
]
