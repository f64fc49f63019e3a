"""What a run records of its placement (run.json `plugins`, summary `k`): the algorithm, each
part in order with where it comes from, and the figures the sampler in use gives of itself
(its effective K, whether it draws uniformly), never the config keys it may ignore."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import TYPE_CHECKING

from harness.model.registry import Registry
from harness.model.scheduling.placement.pipeline import Parts
from harness.model.scheduling.placement.registries import (
    FILTERS,
    SAMPLERS,
    SCORERS,
    SELECTORS,
    named_parts,
)
from harness.model.scheduling.strategies import STRATEGIES

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec


def drawn(rules: PlacementSpec, n_nodes: int, external: bool) -> tuple[int | None, bool | None]:
    """The sampler's effective K among `n_nodes` nodes and whether it draws uniformly
    (`Sampler.candidates`, `Sampler.uniform`), asked of the sampler built as a replica builds
    it; (None, None) under an external replica, which samples as it likes."""
    if external:
        return None, None
    sampler = Parts.of(rules).sampler(rules)
    return sampler.candidates(n_nodes), sampler.uniform


def placement_record(
    rules: PlacementSpec, strategies: list[str], n_nodes: int, external: bool
) -> dict[str, object]:
    """The run's placement as run.json keeps it: `algorithm`, the effective `k` and `uniform`
    (`drawn`), and `parts`: every part of the pipeline in order, then the strategies, each with
    where it comes from (`Registry.source`), so a plugin from another package is seen to be in
    use, and its `settings` where it has any. Under an external scheduler the pipeline places
    nothing: no algorithm, and only the strategies are listed."""
    named: list[tuple[Registry, str, float | None]] = []
    if not external:
        sampler, filters, scorers, selector = named_parts(rules)
        named += [
            (SAMPLERS, sampler, None),
            *((FILTERS, f, None) for f in dict.fromkeys(filters)),
            *((SCORERS, name, weight) for name, weight in scorers),
            (SELECTORS, selector, None),
        ]
    named += [(STRATEGIES, s, None) for s in strategies]
    parts: list[dict[str, object]] = []
    for registry, name, weight in named:
        entry: dict[str, object] = {"kind": registry.one, "name": name}
        if weight is not None:
            entry["weight"] = weight
        entry["from"] = registry.source(name)
        plugin = registry.resolve(name)
        if fields(plugin.Settings):  # what it ran with: the config's settings, defaults else
            entry["settings"] = asdict(rules.settings_of(plugin))
        parts.append(entry)
    k, uniform = drawn(rules, n_nodes, external)
    return {
        "algorithm": None if external else rules.algorithm,
        "k": k,
        "uniform": uniform,
        "parts": parts,
    }
