"""`cpu_fits`: a node with at least the sandbox's vCPUs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Filter

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class CpuFits(Filter):
    """A node with at least the sandbox's vCPUs (by its last report)."""

    name = "cpu_fits"

    def applies(self, replica: ReplicaState, req: CreateRequest) -> bool:
        return req.vcpu > replica.min_cpu_count

    def passes(self, replica: ReplicaState, node: int, req: CreateRequest, now: float) -> bool:
        return replica.strategy.views[node].cpu_count >= req.vcpu
