"""`reference`: the reference scheduler's score, lower is better (with the `best_of_k` sampler
and the `lowest` selector, its Best-of-K)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Scorer

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class Reference(Scorer):
    """(vcpu + reserved + alpha * cpu_percent / 100) / (R * cpu_count), with `reserved` the
    replica's (`ReplicaState.reserved`)."""

    name = "reference"

    def __init__(self, rules: PlacementSpec) -> None:
        super().__init__(rules)
        self.r = rules.r
        self.alpha = rules.alpha
        """R and alpha, read once: the rules are an interpreted object, and this scores every
        create."""

    def scores(
        self, replica: ReplicaState, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        views = replica.strategy.views
        r, alpha, vcpu = self.r, self.alpha, req.vcpu
        out = []
        for node in candidates:
            view = views[node]
            count = view.cpu_count
            if count:
                reserved = replica.reserved(node, now)
                out.append((vcpu + reserved + alpha * view.cpu_percent / 100.0) / (r * count))
            else:  # a node that reports no CPUs is never chosen over one that does
                out.append(math.inf)
        return out
