"""`fits`: a node with room for the sandbox under R x its vCPUs, by the scheduler's belief
(the `bin_pack` algorithm's filter)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Filter

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class Fits(Filter):
    """A node whose `reserved` (`ReplicaState.reserved`) leaves room for the sandbox under
    R * cpu_count."""

    name = "fits"

    def passes(self, replica: ReplicaState, node: int, req: CreateRequest, now: float) -> bool:
        cpu_count = replica.strategy.views[node].cpu_count
        return replica.reserved(node, now) + req.vcpu <= self.rules.r * cpu_count
