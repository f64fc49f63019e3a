"""A whole config, checked (`Config`), and how one is built from a raw dict (`from_dict`): each
section checked against its declaration, then across sections (`harness.config.validation`).

Its own module, over the sections (`harness.config.sections`) and the validation that reads
them, so changing a key validates again without either importing the other's result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.config.sections import SECTIONS, Sections
from harness.config.validation import (
    checked_faults,
    checked_placement,
    checked_section,
    cross_check,
    set_dotted,
    thresholds_table,
    unknown_key,
)


@dataclass(frozen=True)
class Config(Sections):
    """A whole config, checked (`from_dict`); a copy with keys changed is checked again.

    Built only by `from_dict`, which every change goes through again."""

    def with_value(self, key: str, value: Any) -> Config:
        """A copy with one dotted key changed and the whole config validated again."""
        return self.with_values({key: value})

    def with_values(self, values: dict[str, Any]) -> Config:
        """A copy with several dotted keys changed at once, validated once: keys that must
        agree (say cluster.nodes and cluster.initial_cpu_per_node) can change together."""
        raw = self.to_dict()
        for dotted, value in values.items():
            set_dotted(raw, dotted, value)
        return from_dict(raw)


def from_dict(raw: dict[str, Any]) -> Config:
    """Build and validate a Config; raises ConfigError naming the first bad key."""
    sections: dict[str, Any] = {}
    for name, value in raw.items():
        if name == "faults":
            sections[name] = checked_faults(value)
            continue
        if name == "thresholds":
            sections[name] = thresholds_table(value)
            continue
        if name not in SECTIONS:
            raise unknown_key(name, [*SECTIONS, "faults", "thresholds"])
        if name == "placement":
            sections[name] = checked_placement(value)
            continue
        sections[name] = checked_section(name, SECTIONS[name], value, f"[{name}]")
    config = Config(**sections)
    cross_check(config)
    return config
