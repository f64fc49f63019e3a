"""The pipeline that runs one replica's choice: its parts resolved once from the `[placement]`
keys (`Parts`), then, for every create, sample with the filters that apply, score, select."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.model.scheduling.placement.plugin import (
    Eligible,
    Filter,
    Plugin,
    Sampler,
    Scorer,
    Selector,
)
from harness.model.scheduling.placement.registries import named_parts, resolve

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest, Shape


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
            list(dict.fromkeys(resolve("filters", f) for f in filters)),  # each once, by class
            [(resolve("scorers", name), weight) for name, weight in scorers],
            resolve("selectors", selector),
        )

    def reads_report_times(self) -> bool:
        """Whether any part reads when a view was reported (`Plugin.reads_report_times`)."""
        classes = [self.sampler, *self.filters, *(s for s, _ in self.scorers), self.selector]
        return any(c.reads_report_times for c in classes)


class Pipeline:
    """One replica's placement: sample with the filters that apply, score, select.

    Its parts are resolved once, at construction: `choose` runs for every create, so it makes no
    lookups a replica's lifetime cannot change."""

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
        self, replica: ReplicaState, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        scores = [0.0] * len(candidates)
        for scorer, weight in self.scorers:
            part = scorer.scores(replica, candidates, req, now)
            scores = [s + weight * p for s, p in zip(scores, part, strict=True)]
        return scores

    def eligible(self, replica: ReplicaState, req: CreateRequest, now: float) -> Eligible | None:
        """The test a candidate must pass for this request; None when no filter applies."""
        shape = req.shape
        if shape is not self.shape:  # a shape's own filters, asked once per shape
            self.shape = shape
            self.shaped = [f for f in self.by_shape if f.applies(replica, req)]
        active = self.shaped.copy()
        for f in self.by_request:  # a loop, not a comprehension: this runs for every create
            if f.applies(replica, req):
                active.append(f)
        if not active:
            return None
        if len(active) == 1:
            passes = active[0].passes
            return lambda node: passes(replica, node, req, now)
        return lambda node: all(f.passes(replica, node, req, now) for f in active)

    def sample(self, replica: ReplicaState, eligible: Eligible | None) -> list[int]:
        return self.sampler.sample(replica, eligible)

    def choose(self, replica: ReplicaState, req: CreateRequest, now: float) -> int | None:
        eligible = self.eligible(replica, req, now) if self.filters else None
        candidates = self.sampler.sample(replica, eligible)
        scorer = self.scorer
        if scorer is None:
            scores = self._weighted(replica, candidates, req, now)
        else:
            scores = scorer.scores(replica, candidates, req, now)
        return self.selector.select(replica, candidates, scores)
