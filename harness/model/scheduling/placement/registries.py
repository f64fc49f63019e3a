"""The registries of placement plugins, one per extension point, and how a config names one
("name", "name=weight" for a scorer, or "module:Class")."""

from __future__ import annotations

from dataclasses import fields

from harness.model.registry import Registry, RegistryError
from harness.model.scheduling.placement.algorithms import ALGORITHMS
from harness.model.scheduling.placement.filters.cpu_family import CpuFamily
from harness.model.scheduling.placement.filters.cpu_fits import CpuFits
from harness.model.scheduling.placement.filters.excluded import Excluded
from harness.model.scheduling.placement.filters.fits import Fits
from harness.model.scheduling.placement.filters.labels import RequiredLabels
from harness.model.scheduling.placement.filters.memory_overcommit import MemoryOvercommit
from harness.model.scheduling.placement.filters.too_many_starting import TooManyStarting
from harness.model.scheduling.placement.placement_keys import PlacementSpec
from harness.model.scheduling.placement.plugin import Filter, Sampler, Scorer, Selector
from harness.model.scheduling.placement.samplers.best_of_k import BestOfK
from harness.model.scheduling.placement.samplers.every_node import EveryNode
from harness.model.scheduling.placement.samplers.one_at_random import OneAtRandom
from harness.model.scheduling.placement.samplers.round_robin import RoundRobin
from harness.model.scheduling.placement.samplers.two_choices import TwoChoices
from harness.model.scheduling.placement.scorers.bin_pack import BinPack
from harness.model.scheduling.placement.scorers.cache_affinity import CacheAffinity
from harness.model.scheduling.placement.scorers.constant import Constant
from harness.model.scheduling.placement.scorers.cpu_usage import CpuUsage
from harness.model.scheduling.placement.scorers.reference import Reference
from harness.model.scheduling.placement.selectors.least_busy_quirk import LeastBusyQuirk
from harness.model.scheduling.placement.selectors.lowest import Lowest
from harness.model.scheduling.strategies import STRATEGIES

SAMPLERS = Registry(
    "samplers", "sampler", Sampler, (BestOfK, EveryNode, OneAtRandom, TwoChoices, RoundRobin)
)
FILTERS = Registry(
    "filters",
    "filter",
    Filter,
    (Excluded, TooManyStarting, CpuFits, MemoryOvercommit, RequiredLabels, CpuFamily, Fits),
)
SCORERS = Registry(
    "scorers", "scorer", Scorer, (Reference, CpuUsage, BinPack, Constant, CacheAffinity)
)
SELECTORS = Registry("selectors", "selector", Selector, (Lowest, LeastBusyQuirk))
REGISTRIES = {r.axis: r for r in (SAMPLERS, FILTERS, SCORERS, SELECTORS)}
"""The placement extension points by axis (the name of their config key)."""

PluginError = RegistryError


def resolve(kind: str, ref: str) -> type:
    """The plugin class of axis `kind` that `ref` names (see `harness.model.registry`)."""
    return REGISTRIES[kind].resolve(ref)


def parse_weighted(entry: str) -> tuple[str, float]:
    """ "name" or "name=weight" -> (name, weight); PluginError if the weight is not a number."""
    name, sep, weight = entry.rpartition("=")
    if not sep:
        return entry, 1.0
    try:
        return name, float(weight)
    except ValueError:
        raise PluginError(f"{entry!r}: the weight after = must be a number") from None


def named_parts(
    rules: PlacementSpec,
) -> tuple[str, list[str], list[tuple[str, float]], str]:
    """The references of the sampler, filters, (scorer, weight)s and selector a `PlacementSpec`
    names: its own lists, or its algorithm's where it names none; upstream's
    `too_many_starting` flag adds that filter to any pipeline."""
    algorithm = ALGORITHMS[rules.algorithm]
    filters = list(rules.filters or algorithm.filters)
    if rules.too_many_starting:
        filters.append(TooManyStarting.name)
    return (
        rules.sampler or algorithm.sampler,
        filters,
        [parse_weighted(s) for s in rules.scorers] or list(algorithm.scorers),
        rules.selector or algorithm.selector,
    )


SETTINGS_AXES: tuple[Registry, ...] = (SAMPLERS, FILTERS, SCORERS, SELECTORS, STRATEGIES)
"""The axes whose plugins may have settings of their own (`[placement.<table>]`)."""


def with_settings(rules: PlacementSpec, installed: bool = True) -> dict[str, type]:
    """Table -> plugin class of every plugin a config can give settings to (one with a
    non-empty `Settings`): the built-in ones, the installed ones (unless not `installed`), and
    those `rules` name by import path (`PlacementSpec.table_of`)."""
    classes: list[type] = []
    for registry in SETTINGS_AXES:
        classes += registry.builtins.values()
        for name in registry.installed() if installed else ():
            try:
                classes.append(registry.resolve(name))
            except RegistryError:  # one that does not import is refused where it is named
                continue
    sampler, filters, scorers, selector = named_parts(rules)
    refs = [(SAMPLERS, sampler), *((FILTERS, f) for f in filters), (SELECTORS, selector)]
    refs += [(SCORERS, name) for name, _ in scorers] + [(STRATEGIES, rules.strategy)]
    classes += (registry.resolve(ref) for registry, ref in refs if ":" in ref)
    return {rules.table_of(c): c for c in classes if fields(c.Settings)}


def old_keys() -> dict[str, tuple[str, str]]:
    """Old `[placement]` key -> (table, key) of the built-in plugin setting that replaced it
    (`was` in the setting's metadata): read as an alias, with a notice."""
    return {
        f.metadata["was"]: (PlacementSpec.table_of(c), f.name)
        for registry in SETTINGS_AXES
        for c in registry.builtins.values()
        for f in fields(c.Settings)
        if f.metadata.get("was")
    }
