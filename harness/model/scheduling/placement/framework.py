"""Registries of placement plugins, algorithms as named pipelines, and the pipeline that runs a
choice."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.registry import Registry, RegistryError
from harness.model.scheduling.ledgers import LEDGERS
from harness.model.scheduling.placement.affinity import CacheAffinity
from harness.model.scheduling.placement.best_of_k import BestOfK, EveryNode, Lowest, Reference
from harness.model.scheduling.placement.designs import (
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
from harness.model.scheduling.placement.filters import (
    CpuFamily,
    CpuFits,
    Excluded,
    MemoryOvercommit,
    RequiredLabels,
    TooManyStarting,
)
from harness.model.scheduling.placement.plugin import (
    Eligible,
    Filter,
    Plugin,
    Sampler,
    Scorer,
    Selector,
)

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec
    from harness.model.scheduling.scheduler import Scheduler
    from harness.model.workload.request import CreateRequest, Shape

SAMPLERS = Registry(
    "samplers", "sampler", Sampler, (BestOfK, EveryNode, OneAtRandom, TwoChoices, RoundRobin)
)
FILTERS = Registry(
    "filters",
    "filter",
    Filter,
    (
        Excluded,
        TooManyStarting,
        CpuFits,
        MemoryOvercommit,
        RequiredLabels,
        CpuFamily,
        StartingCap,
        Fits,
    ),
)
SCORERS = Registry(
    "scorers", "scorer", Scorer, (Reference, CpuUsage, BinPack, Constant, CacheAffinity)
)
SELECTORS = Registry("selectors", "selector", Selector, (Lowest, LeastBusyQuirk))
REGISTRIES = {r.axis: r for r in (SAMPLERS, FILTERS, SCORERS, SELECTORS)}
"""The placement extension points by axis (the name of their config key)."""

PluginError = RegistryError


def plugin_catalogue() -> list[tuple[str, str, str]]:
    """(kind, name, source) of every placement plugin, algorithm and ledger strategy: built
    in ("harness") or installed (its entry point)."""
    rows = [("algorithm", name, "harness") for name in ALGORITHMS]
    for registry in (*REGISTRIES.values(), LEDGERS):
        kind = registry.one
        rows += [(kind, name, "harness") for name in registry.builtins]
        rows += [(kind, name, path) for name, path in registry.installed().items()]
    return rows


def resolve(kind: str, ref: str) -> type:
    """The plugin class of axis `kind` that `ref` names (see `harness.model.registry`)."""
    return REGISTRIES[kind].resolve(ref)


@dataclass(frozen=True)
class Algorithm:
    """A named pipeline: what `placement.algorithm` picks unless the config lists plugins."""

    sampler: str
    filters: tuple[str, ...]
    scorers: tuple[tuple[str, float], ...]
    selector: str = "lowest"


ELIGIBLE = ("memory_overcommit", "labels", "cpu_family")
"""Upstream's eligibility beyond the CPU: every algorithm keeps to it. Each costs nothing unless
used: `memory_overcommit` is dropped with M = 0, `labels` and `cpu_family` skip a request that
requires neither."""
BEST_OF_K_FILTERS = ("excluded", "too_many_starting", "cpu_fits", *ELIGIBLE)
LEAST_BUSY_FILTERS = ("excluded", "starting_cap", "cpu_fits", *ELIGIBLE)
ALGORITHMS = {
    "best_of_k": Algorithm("best_of_k", BEST_OF_K_FILTERS, (("reference", 1.0),)),
    "power_of_two": Algorithm("two_choices", BEST_OF_K_FILTERS, (("reference", 1.0),)),
    "random": Algorithm("one_at_random", BEST_OF_K_FILTERS, (("constant", 1.0),)),
    "round_robin": Algorithm("round_robin", BEST_OF_K_FILTERS, (("constant", 1.0),)),
    "bin_pack": Algorithm("every_node", (*BEST_OF_K_FILTERS, "fits"), (("bin_pack", 1.0),)),
    "least_busy": Algorithm(
        "every_node", LEAST_BUSY_FILTERS, (("cpu_usage", 1.0),), "least_busy_quirk"
    ),
    "least_busy_corrected": Algorithm("every_node", LEAST_BUSY_FILTERS, (("cpu_usage", 1.0),)),
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


def named_parts(
    rules: PlacementSpec,
) -> tuple[str, list[str], list[tuple[str, float]], str]:
    """The references of the sampler, filters, (scorer, weight)s and selector a `PlacementSpec`
    names: its own lists, or its algorithm's where it names none."""
    algorithm = ALGORITHMS[rules.algorithm]
    return (
        rules.sampler or algorithm.sampler,
        list(rules.filters or algorithm.filters),
        [parse_weighted(s) for s in rules.scorers] or list(algorithm.scorers),
        rules.selector or algorithm.selector,
    )


def plugins_in_use(rules: PlacementSpec, strategies: list[str]) -> list[dict[str, object]]:
    """Every part of the placement pipeline in order, then the strategies, each with where it
    comes from (`Registry.source`): what a run names in run.json and on screen, so a plugin
    from another package is seen to be in use."""
    sampler, filters, scorers, selector = named_parts(rules)
    named: list[tuple[Registry, str, float | None]] = [
        (SAMPLERS, sampler, None),
        *((FILTERS, f, None) for f in filters),
        *((SCORERS, name, weight) for name, weight in scorers),
        (SELECTORS, selector, None),
        *((LEDGERS, s, None) for s in strategies),
    ]
    parts: list[dict[str, object]] = []
    for registry, name, weight in named:
        entry: dict[str, object] = {"kind": registry.one, "name": name}
        if weight is not None:
            entry["weight"] = weight
        entry["from"] = registry.source(name)
        parts.append(entry)
    return parts


@dataclass(frozen=True)
class Parts:
    """The plugins a `PlacementSpec` names, by extension point: its own lists, or its
    algorithm's where it names none."""

    sampler: type[Sampler]
    filters: list[type[Filter]]
    scorers: list[tuple[type[Scorer], float]]
    selector: type[Selector]

    @classmethod
    def of(cls, rules: PlacementSpec) -> Parts:
        sampler, filters, scorers, selector = named_parts(rules)
        return cls(
            resolve("samplers", sampler),
            [resolve("filters", f) for f in filters],
            [(resolve("scorers", name), weight) for name, weight in scorers],
            resolve("selectors", selector),
        )

    def reads_report_times(self) -> bool:
        """Whether any part reads when a view was reported (`Plugin.reads_report_times`)."""
        classes = [self.sampler, *self.filters, *(s for s, _ in self.scorers), self.selector]
        return any(c.reads_report_times for c in classes)


@mypyc_attr(allow_interpreted_subclasses=True)
class Pipeline:
    """One replica's placement: sample with the filters that apply, score, select.

    Its parts are resolved once, at construction: `choose` runs for every create, so it makes no
    lookups a replica's lifetime cannot change. Subclassed by an external scheduler's choice
    (`harness.external.replica.RemoteChoice`)."""

    __slots__ = (
        "by_request",
        "by_shape",
        "filters",
        "placed_hooks",
        "sampler",
        "scorer",
        "scorers",
        "selector",
        "shape",
        "shaped",
    )

    def __init__(self, rules: PlacementSpec) -> None:
        named = Parts.of(rules)
        sampler = named.sampler(rules)
        self.filters: list[Filter] = [f for f in (c(rules) for c in named.filters) if f.needed()]
        self.by_request = [f for f in self.filters if not f.per_shape]
        self.by_shape = [f for f in self.filters if f.per_shape]
        self.shape: Shape | None = None
        self.shaped: list[Filter] = []
        """The `by_shape` filters that apply to `shape`, the last shape asked about."""
        self.scorers = [(scorer(rules), weight) for scorer, weight in named.scorers]
        selector = named.selector(rules)
        self.sampler = sampler
        self.selector = selector
        parts: list[Plugin] = [sampler, *self.filters, *(s for s, _ in self.scorers), selector]
        self.placed_hooks = [p.placed for p in parts if type(p).placed is not Plugin.placed]
        """The parts that learn from their placements (`Plugin.placed`)."""
        # One scorer of weight 1: its scores are the scores (no float work added).
        single = len(self.scorers) == 1 and self.scorers[0][1] == 1.0
        self.scorer: Scorer | None = self.scorers[0][0] if single else None

    def _weighted(
        self, scheduler: Scheduler, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        scores = [0.0] * len(candidates)
        for scorer, weight in self.scorers:
            part = scorer.scores(scheduler, candidates, req, now)
            scores = [s + weight * p for s, p in zip(scores, part, strict=True)]
        return scores

    def eligible(self, scheduler: Scheduler, req: CreateRequest, now: float) -> Eligible | None:
        """The test a candidate must pass for this request; None when no filter applies."""
        shape = req.shape
        if shape is not self.shape:  # a shape's own filters, asked once per shape
            self.shape = shape
            self.shaped = [f for f in self.by_shape if f.applies(scheduler, req)]
        active = self.shaped.copy()
        for f in self.by_request:  # a loop, not a comprehension: this runs for every create
            if f.applies(scheduler, req):
                active.append(f)
        if not active:
            return None
        if len(active) == 1:
            passes = active[0].passes
            return lambda node: passes(scheduler, node, req, now)
        return lambda node: all(f.passes(scheduler, node, req, now) for f in active)

    def sample(self, scheduler: Scheduler, eligible: Eligible | None) -> list[int]:
        return self.sampler.sample(scheduler, eligible)

    def choose(self, scheduler: Scheduler, req: CreateRequest, now: float) -> int | None:
        eligible = self.eligible(scheduler, req, now) if self.filters else None
        candidates = self.sampler.sample(scheduler, eligible)
        scorer = self.scorer
        if scorer is None:
            scores = self._weighted(scheduler, candidates, req, now)
        else:
            scores = scorer.scores(scheduler, candidates, req, now)
        return self.selector.select(scheduler, candidates, scores)
