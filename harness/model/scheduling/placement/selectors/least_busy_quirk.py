"""`least_busy_quirk`: upstream's least-busy comparison, quirk included (the `least_busy`
algorithm; `least_busy_corrected` takes `lowest` instead)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Selector

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState


@mypyc_attr(allow_interpreted_subclasses=True)
class LeastBusyQuirk(Selector):
    """Upstream's least-busy comparison as it was: a candidate takes the lead when its reported
    usage plus its in-progress vCPUs is below the leader's reported usage alone (the leader's
    in-progress vCPUs are not added); the first in scan order wins ties."""

    name = "least_busy_quirk"

    def select(
        self, replica: ReplicaState, candidates: list[int], scores: list[float]
    ) -> int | None:
        views = replica.strategy.views
        leader = None
        leader_usage = math.inf
        for node, with_pending in zip(candidates, scores, strict=True):
            if leader is None or with_pending < leader_usage:
                leader, leader_usage = node, views[node].cpu_percent / 100.0
        return leader
