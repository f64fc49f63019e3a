"""Placement designs users compare against Best-of-K, built from the same extension points:
upstream's earlier least-busy scan (its quirk included), bin-packing, random, round-robin and
the power of two choices."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.best_of_k import sample
from harness.model.scheduling.placement.plugin import Eligible, Filter, Sampler, Scorer, Selector

if TYPE_CHECKING:
    from harness.model.scheduling.scheduler import Scheduler
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class OneAtRandom(Sampler):
    """One eligible node, uniformly at random (Best-of-K with K = 1)."""

    name = "one_at_random"

    def sample(self, scheduler: Scheduler, eligible: Eligible | None) -> list[int]:
        return sample(scheduler.random, scheduler.n, 1, eligible)


@mypyc_attr(allow_interpreted_subclasses=True)
class TwoChoices(Sampler):
    """Two eligible nodes, uniformly without replacement: the power of two choices."""

    name = "two_choices"

    def sample(self, scheduler: Scheduler, eligible: Eligible | None) -> list[int]:
        return sample(scheduler.random, scheduler.n, 2, eligible)


@mypyc_attr(allow_interpreted_subclasses=True)
class RoundRobin(Sampler):
    """The next eligible node after the last one this replica sampled, in node order."""

    name = "round_robin"

    def __init__(self, rules: object) -> None:
        super().__init__(rules)  # type: ignore[arg-type]
        self.next = 0

    def sample(self, scheduler: Scheduler, eligible: Eligible | None) -> list[int]:
        n = scheduler.n
        for step in range(n):
            node = (self.next + step) % n
            if eligible is None or eligible(node):
                self.next = node + 1
                return [node]
        return []


@mypyc_attr(allow_interpreted_subclasses=True)
class StartingCap(Filter):
    """Not a node with more than `placement.max_starting` creates in progress, always (the
    least-busy scan's cap; `too_many_starting` is the flag-guarded one of Best-of-K)."""

    name = "starting_cap"

    def passes(self, scheduler: Scheduler, node: int, req: CreateRequest, now: float) -> bool:
        return scheduler.starting[node] <= self.rules.max_starting


@mypyc_attr(allow_interpreted_subclasses=True)
class Fits(Filter):
    """A node whose `reserved` (the believed allocation, plus creates in progress for
    strategies that count them) leaves room for the sandbox under R * cpu_count."""

    name = "fits"

    def passes(self, scheduler: Scheduler, node: int, req: CreateRequest, now: float) -> bool:
        cpu_count = scheduler.ledger.views[node].cpu_count
        return scheduler.reserved(node, now) + req.vcpu <= self.rules.r * cpu_count


@mypyc_attr(allow_interpreted_subclasses=True)
class CpuUsage(Scorer):
    """Reported CPU usage (in vCPUs) plus this replica's creates in progress on the node."""

    name = "cpu_usage"

    def scores(
        self, scheduler: Scheduler, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        views, pending = scheduler.ledger.views, scheduler.pending_cpu
        return [views[n].cpu_percent / 100.0 + pending[n] for n in candidates]


@mypyc_attr(allow_interpreted_subclasses=True)
class BinPack(Scorer):
    """The fuller the node (believed allocation over capacity), the better: fill one before
    the next. Pair it with the `fits` filter."""

    name = "bin_pack"

    def scores(
        self, scheduler: Scheduler, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        views, reserved, r = scheduler.ledger.views, scheduler.reserved, self.rules.r
        return [
            -reserved(n, now) / (r * views[n].cpu_count) if views[n].cpu_count else math.inf
            for n in candidates
        ]


@mypyc_attr(allow_interpreted_subclasses=True)
class Constant(Scorer):
    """The same score for every node: the sampler alone decides (with `lowest`, its first)."""

    name = "constant"

    def scores(
        self, scheduler: Scheduler, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        return [0.0] * len(candidates)


@mypyc_attr(allow_interpreted_subclasses=True)
class LeastBusyQuirk(Selector):
    """Upstream's least-busy comparison as it was: a candidate takes the lead when its reported
    usage plus its in-progress vCPUs is below the leader's reported usage alone (the leader's
    in-progress vCPUs are not added); the first in scan order wins ties."""

    name = "least_busy_quirk"

    def select(
        self, scheduler: Scheduler, candidates: list[int], scores: list[float]
    ) -> int | None:
        views = scheduler.ledger.views
        leader = None
        leader_usage = math.inf
        for node, with_pending in zip(candidates, scores, strict=True):
            if leader is None or with_pending < leader_usage:
                leader, leader_usage = node, views[node].cpu_percent / 100.0
        return leader
