"""Sweep files: a base scenario, a grid of dotted keys to vary, and seeds, expanded into cells.

```toml
[sweep]
base = "seed-herd.toml"      # relative to this file
seeds = 10                   # optional; default: the base's run.seeds

[set]                        # optional: fixed changes to the base
"run.sample_interval_s" = 0.5

[grid]                       # every combination is one cell; "all" = every choice of a key
"placement.strategy" = "all" "cluster.nodes" = [10, 100, 1000]

[linked]                     # optional: keys that move with a grid key, one value per step
"workload.rate_per_s" = { with = "cluster.nodes", values = [20, 200, 2000] }

[thresholds]                 # optional: checked on every cell, as a config's
(harness.results.thresholds)
"optimistic.cv_median" = "< 0.05"
```

Every mistake is a ConfigError naming the key (exit 2 in the CLI), found before anything runs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from harness.config import (
    Config,
    ConfigError,
    check_folder_name,
    flatten,
    load,
    parse_override,
    parse_toml,
    thresholds_table,
    with_thresholds,
)
from harness.model.scheduling.placement.registries import old_keys, with_settings
from harness.model.tunables import choice_names

_SECTIONS = {"sweep", "set", "grid", "linked", "thresholds"}
_SWEEP_KEYS = {"base", "name", "seeds"}


@dataclass(frozen=True)
class Cell:
    """One point of the grid: its index (the partition key on disk), values and config."""

    index: int
    values: dict[str, Any]
    config: Config


@dataclass(frozen=True)
class Sweep:
    name: str
    base: Config
    grid: dict[str, list[Any]]
    linked: dict[str, tuple[str, list[Any]]]
    cells: list[Cell]

    @property
    def seeds(self) -> list[int]:
        return self.base.run.seed_numbers

    @property
    def keys(self) -> list[str]:
        """Every key that differs between cells: grid keys, then linked ones."""
        return [*self.grid, *self.linked]

    def identity(self) -> dict[str, Any]:
        """What makes two sweeps the same: a folder may only be resumed by its own sweep.
        Thresholds judge results without changing them, so a resume may bring other ones."""
        base = self.base.to_dict()
        del base["thresholds"]
        return {
            "base": base,
            "grid": self.grid,
            "linked": {k: {"with": w, "values": v} for k, (w, v) in self.linked.items()},
            "seeds": self.seeds,
        }


def get_value(config: Config, key: str) -> Any:
    """The value of a dotted key (`section.leaf`, or a plugin's setting,
    `placement.<table>.<key>` or the old `[placement]` key it replaced) in a config."""
    section, _, leaf = key.partition(".")
    table, _, setting = leaf.partition(".")
    if section == "placement" and not setting and leaf in old_keys():
        table, setting = old_keys()[leaf]
    if section == "placement" and setting:
        plugin = with_settings(config.placement)[table]
        return getattr(config.placement.settings_of(plugin), setting)
    return getattr(getattr(config, section), leaf)


def _choices(config: Config, key: str) -> tuple[str, ...] | None:
    section, _, leaf = key.partition(".")
    part = getattr(config, section, None)
    for f in fields(part) if is_dataclass(part) else ():
        if f.name == leaf:
            return choice_names(f.metadata)
    return None


def _table(raw: dict[str, Any], name: str) -> dict[str, Any]:
    value = raw.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(name, f"must be a table, got {value!r}")
    return value


def _check_values(base: Config, section: str, key: str, values: Any) -> list[Any]:
    """Validate each value of a varied key on the base; returns them as the config holds them."""
    where = f"{section}.{key}"
    if values == "all":
        choices = _choices(base, key)
        if not choices:
            _changed(base, {key: values}, prefix=f"{section}.")  # an unknown key says so
            raise ConfigError(where, '"all" only works for keys with a fixed set of choices')
        values = list(choices)
    if not isinstance(values, list) or not values:
        raise ConfigError(where, f"must be a non-empty list of values, got {values!r}")
    checked = []
    for value in values:
        try:
            checked.append(get_value(base.with_value(key, value), key))
        except ConfigError as e:
            raise ConfigError(f"{section}.{e.key}", e.reason) from None
    if len({repr(v) for v in checked}) != len(checked):
        raise ConfigError(where, f"has repeated values: {values}")
    return checked


def _changed(base: Config, values: dict[str, Any], prefix: str = "", key: str = "") -> Config:
    """The base with `values` applied; an error names `key`, or the bad key after `prefix`."""
    try:
        return base.with_values(values)
    except ConfigError as e:
        raise ConfigError(key or f"{prefix}{e.key}", e.reason) from None


def load_sweep(
    path: str | Path,
    overrides: list[str] = (),
    seeds: int | None = None,
    thresholds: list[str] = (),
) -> Sweep:
    """Read and validate a sweep file; `overrides` (`key=value`) change the base like [set];
    the sweep's [thresholds] and `thresholds` (`--threshold`) add to the base's, every cell
    checked against those naming its strategy or none."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise ConfigError("", f"cannot read sweep file {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ConfigError("", f"sweep file {path} is not UTF-8 text ({e.reason})") from None
    raw = parse_toml(text, path)
    if "sweep" not in raw and raw.keys() - _SECTIONS:
        raise ConfigError(
            "",
            f"{path} is a scenario file, not a sweep (no [sweep] table): "
            f"run it with harness run {path}",
        )
    for name in raw:
        if name not in _SECTIONS:
            raise ConfigError(name, f"unknown section; known: {', '.join(sorted(_SECTIONS))}")
    head = _table(raw, "sweep")
    for key in head:
        if key not in _SWEEP_KEYS:
            raise ConfigError(f"sweep.{key}", f"unknown key; known: {', '.join(_SWEEP_KEYS)}")
    if not isinstance(head.get("base"), str):
        raise ConfigError("sweep.base", "must name the base scenario file, e.g. seed-herd.toml")
    name = head.get("name", path.stem)
    if not isinstance(name, str):
        raise ConfigError("sweep.name", f"must be a string, got {name!r}")
    check_folder_name("sweep.name", name)  # the default folder is results/<name>

    base_path = path.parent / head["base"]
    try:
        base = load(base_path)
    except ConfigError as e:
        raise ConfigError(e.key or "sweep.base", f"{e.reason} (base {base_path})") from None
    base = _changed(base, flatten(_table(raw, "set")), prefix="set.")
    if "seeds" in head:
        base = _changed(base, {"run.seeds": head["seeds"]}, key="sweep.seeds")
    base = _changed(base, dict(parse_override(text) for text in overrides), prefix="--set ")
    if seeds is not None:
        base = _changed(base, {"run.seeds": seeds}, key="--seeds")
    own = thresholds_table(raw.get("thresholds", {}))
    base = with_thresholds(replace(base, thresholds=base.thresholds + own), thresholds)

    grid_raw = flatten(_table(raw, "grid"))
    if not grid_raw:
        raise ConfigError("grid", "names no key to vary")
    grid = {key: _check_values(base, "grid", key, values) for key, values in grid_raw.items()}
    for text in overrides:
        key = parse_override(text)[0]
        if key in grid:
            raise ConfigError(key, "is varied by the grid; it cannot also be set")

    linked = {}
    for key, spec in flatten(_table(raw, "linked"), leaf="with").items():
        where = f"linked.{key}"
        if not isinstance(spec, dict) or set(spec) != {"with", "values"}:
            raise ConfigError(where, "must be { with = <grid key>, values = [...] }")
        if not isinstance(spec["with"], str) or spec["with"] not in grid:
            raise ConfigError(f"{where}.with", f"must be a grid key, got {spec['with']!r}")
        if key in grid:
            raise ConfigError(where, "is already a grid key")
        values = _check_values(base, "linked", key, spec["values"])
        if len(values) != len(grid[spec["with"]]):
            raise ConfigError(
                f"{where}.values",
                f"has {len(values)} values for {len(grid[spec['with']])} of {spec['with']}",
            )
        linked[key] = (spec["with"], values)

    from harness.config import trace_file  # Arrow: loaded once the sweep itself holds

    cells = []
    for index, combo in enumerate(itertools.product(*grid.values())):
        values = dict(zip(grid, combo, strict=True))
        for key, (with_key, linked_values) in linked.items():
            values[key] = linked_values[grid[with_key].index(values[with_key])]
        try:
            config = base.with_values(values)
            trace_file.check(config)
        except ConfigError as e:
            raise ConfigError(e.key, f"{e.reason} (in the cell {values})") from None
        cells.append(Cell(index, values, config))
    return Sweep(name, base, grid, linked, cells)
