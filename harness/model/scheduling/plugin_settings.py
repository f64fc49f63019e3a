"""The settings of the built-in plugins that have any (`PluginSettings`), each written under
its plugin's own table, `[placement.<name>]`. Declared here, not in the plugins' modules, because
those are compiled (see README, "Compiled hot path") and the config layer reads these
dataclasses' fields as written. `was` names the `[placement]` key a setting replaces, still read
as an alias with a notice."""

from __future__ import annotations

from dataclasses import dataclass

from harness.model.tunables import PluginSettings, key


@dataclass(frozen=True)
class TtlSettings(PluginSettings):
    """The `ttl` strategy's."""

    ttl_s: float = key(20.0, "How long an optimistic entry counts.", gt=0, was="ttl_s")


@dataclass(frozen=True)
class StartingCapSettings(PluginSettings):
    """The `too_many_starting` filter's."""

    max_starting: int = key(
        3, "In-progress creates above which a node is skipped.", ge=0, was="max_starting"
    )


@dataclass(frozen=True)
class MemoryOvercommitSettings(PluginSettings):
    """The `memory_overcommit` filter's."""

    ratio: float = key(
        0.0,
        "Memory over-commit ratio M: a node is skipped whose reported allocated memory + the "
        "request exceeds M x its reported total; 0: off.",
        ge=0,
        was="memory_overcommit",
    )


@dataclass(frozen=True)
class CacheAffinitySettings(PluginSettings):
    """The `cache_affinity` scorer's."""

    max_hits: int = key(
        10,
        "Placements of a template on a node that add to its bonus; more add nothing.",
        ge=1,
        was="affinity_max_hits",
    )
    top_nodes: int = key(
        20,
        "Nodes remembered per template, those with the most placements.",
        ge=1,
        was="affinity_top_nodes",
    )
    ttl_s: float = key(
        28800.0,
        "A template's record is forgotten this long after its last placement.",
        gt=0,
        was="affinity_ttl_s",
    )
