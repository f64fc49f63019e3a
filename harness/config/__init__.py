"""Scenario configuration: TOML in, validated dataclasses out.

`sections` declares the sections (the model's own specs, plus how a run is driven),
`validation` checks a raw dict against it, `config` builds the checked whole (`Config`),
`reading` reads files and `--set` overrides,
`key_tables` lists every key for the docs; `sweep_file` and `trace_file` read the other inputs."""

from harness.config.config import Config, from_dict
from harness.config.reading import (
    load,
    parse_override,
    parse_toml,
    stored_config,
    with_thresholds,
)
from harness.config.sections import SECTIONS, RayConfig, RunConfig
from harness.config.validation import (
    ConfigError,
    check_folder_name,
    flatten,
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
    "stored_config",
    "thresholds_table",
    "with_thresholds",
]
