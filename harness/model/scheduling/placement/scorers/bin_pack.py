"""`bin_pack`: the fuller the node the better (the `bin_pack` algorithm, with the `fits`
filter)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Scorer

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class BinPack(Scorer):
    """The fuller the node (`ReplicaState.reserved` over capacity), the better: fill one before
    the next. Pair it with the `fits` filter."""

    name = "bin_pack"

    def scores(
        self, replica: ReplicaState, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        views, r = replica.strategy.views, self.rules.r
        return [
            -replica.reserved(n, now) / (r * views[n].cpu_count) if views[n].cpu_count else math.inf
            for n in candidates
        ]
