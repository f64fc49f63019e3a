"""Registries of placement plugins, algorithms as named pipelines, and the pipeline that runs a
choice."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from harness.ledgers import LEDGERS
from harness.placement.best_of_k import BestOfK, EveryNode, Lowest, Reference
from harness.placement.designs import (
    BinPack,
    Constant,
    CpuUsage,
    Fits,
    LeastBusyQuirk,
    OneAtRandom,
    RoundRobin,
    StartingCap,
    TwoChoices,
)
from harness.placement.filters import CpuFits, Excluded, TooManyStarting
from harness.placement.plugin import KINDS, Eligible, Filter, Plugin, Sampler, Scorer, Selector

if TYPE_CHECKING:
    from harness.scheduler import PlacementSpec, Scheduler

SAMPLERS: dict[str, type[Sampler]] = {
    c.name: c for c in (BestOfK, EveryNode, OneAtRandom, TwoChoices, RoundRobin)
}
FILTERS: dict[str, type[Filter]] = {
    c.name: c for c in (Excluded, TooManyStarting, CpuFits, StartingCap, Fits)
}
SCORERS: dict[str, type[Scorer]] = {c.name: c for c in (Reference, CpuUsage, BinPack, Constant)}
SELECTORS: dict[str, type[Selector]] = {c.name: c for c in (Lowest, LeastBusyQuirk)}
REGISTRIES: dict[str, dict[str, type]] = {
    "samplers": SAMPLERS,
    "filters": FILTERS,
    "scorers": SCORERS,
    "selectors": SELECTORS,
}
ENTRY_POINT_GROUP = "herd_harness.{kind}"
"""Entry-point group of an installed plugin package, per kind (e.g. herd_harness.scorers)."""


class PluginError(ValueError):
    """A plugin name or import path that does not resolve to a plugin of its kind."""


def _installed(kind: str) -> dict[str, str]:
    """Name -> "module:attribute" of the plugins installed under this kind's entry points."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP.format(kind=kind))}


def names(kind: str) -> list[str]:
    """Every plugin of `kind` available by name: built in, then installed."""
    return [*REGISTRIES[kind], *(n for n in _installed(kind) if n not in REGISTRIES[kind])]


def plugin_catalogue() -> list[tuple[str, str, str]]:
    """(kind, name, source) of every placement plugin, algorithm and ledger strategy: built
    in ("harness") or installed (its entry point)."""
    rows = [("algorithm", name, "harness") for name in ALGORITHMS]
    for kind, registry in REGISTRIES.items():
        rows += [(kind[:-1], name, "harness") for name in registry]
        rows += [(kind[:-1], n, v) for n, v in _installed(kind).items() if n not in registry]
    return rows + [("strategy", name, "harness") for name in LEDGERS]


def resolve(kind: str, ref: str) -> type[Plugin]:
    """The plugin class `ref` names: a registered name, an installed entry point, or an import
    path "module:Class"; PluginError says why not."""
    base = KINDS[kind]
    registry = REGISTRIES[kind]
    if ref in registry:
        return registry[ref]
    path = _installed(kind).get(ref, ref)
    module, sep, attribute = path.partition(":")
    if not sep:
        raise PluginError(f"unknown {kind[:-1]} {ref!r}; known: {', '.join(names(kind))}")
    try:
        found = getattr(importlib.import_module(module), attribute)
    except ImportError as e:
        raise PluginError(f"cannot import {module!r} for {ref!r}: {e}") from None
    except AttributeError:
        raise PluginError(f"{module!r} has no {attribute!r}") from None
    if not (isinstance(found, type) and issubclass(found, base)):
        raise PluginError(f"{path} is not a {base.__name__} (harness.placement.{base.__name__})")
    return found


@dataclass(frozen=True)
class Algorithm:
    """A named pipeline: what `placement.algorithm` picks unless the config lists plugins."""

    sampler: str
    filters: tuple[str, ...]
    scorers: tuple[tuple[str, float], ...]
    selector: str = "lowest"


BEST_OF_K_FILTERS = ("excluded", "too_many_starting", "cpu_fits")
ALGORITHMS = {
    "best_of_k": Algorithm("best_of_k", BEST_OF_K_FILTERS, (("reference", 1.0),)),
    "power_of_two": Algorithm("two_choices", BEST_OF_K_FILTERS, (("reference", 1.0),)),
    "random": Algorithm("one_at_random", BEST_OF_K_FILTERS, (("constant", 1.0),)),
    "round_robin": Algorithm("round_robin", BEST_OF_K_FILTERS, (("constant", 1.0),)),
    "bin_pack": Algorithm("every_node", (*BEST_OF_K_FILTERS, "fits"), (("bin_pack", 1.0),)),
    "least_busy": Algorithm(
        "every_node",
        ("excluded", "starting_cap", "cpu_fits"),
        (("cpu_usage", 1.0),),
        "least_busy_quirk",
    ),
    "least_busy_corrected": Algorithm(
        "every_node", ("excluded", "starting_cap", "cpu_fits"), (("cpu_usage", 1.0),)
    ),
}
"""Algorithms by name."""


def parse_weighted(entry: str) -> tuple[str, float]:
    """ "name" or "name=weight" -> (name, weight); PluginError if the weight is not a number."""
    name, sep, weight = entry.rpartition("=")
    if not sep:
        return entry, 1.0
    try:
        return name, float(weight)
    except ValueError:
        raise PluginError(f"{entry!r}: the weight after = must be a number") from None


class Pipeline:
    """One replica's placement: sample with the filters that apply, score, select."""

    __slots__ = ("filters", "sampler", "scorers", "selector", "single")

    def __init__(self, rules: PlacementSpec) -> None:
        algorithm = ALGORITHMS[rules.algorithm]
        self.sampler: Sampler = resolve("samplers", rules.sampler or algorithm.sampler)(rules)
        filters = rules.filters or algorithm.filters
        self.filters: list[Filter] = [resolve("filters", f)(rules) for f in filters]
        weighted = [parse_weighted(s) for s in rules.scorers] or algorithm.scorers
        self.scorers = [(resolve("scorers", name)(rules), weight) for name, weight in weighted]
        self.selector: Selector = resolve("selectors", rules.selector or algorithm.selector)(rules)
        # One scorer of weight 1: its scores are the scores (no float work added).
        self.single = self.scorers[0][0] if [w for _, w in self.scorers] == [1.0] else None

    def eligible(
        self, scheduler: Scheduler, vcpu: float, excluded: set[int] | None, now: float
    ) -> Eligible | None:
        """The test a candidate must pass for this request; None when no filter applies."""
        active = [f for f in self.filters if f.applies(scheduler, vcpu, excluded)]
        if not active:
            return None
        return lambda node: all(f.passes(scheduler, node, vcpu, excluded, now) for f in active)

    def choose(
        self, scheduler: Scheduler, vcpu: float, excluded: set[int] | None, now: float
    ) -> int | None:
        eligible = self.eligible(scheduler, vcpu, excluded, now)
        candidates = self.sampler.sample(scheduler, eligible)
        if self.single is not None:
            scores: Sequence[float] = self.single.scores(scheduler, candidates, vcpu, now)
        else:
            scores = [0.0] * len(candidates)
            for scorer, weight in self.scorers:
                part = scorer.scores(scheduler, candidates, vcpu, now)
                scores = [s + weight * p for s, p in zip(scores, part, strict=True)]
        return self.selector.select(scheduler, candidates, scores)
