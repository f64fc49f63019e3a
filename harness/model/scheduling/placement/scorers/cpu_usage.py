"""`cpu_usage`: the least-busy designs' score, reported usage plus the in-progress vCPUs the
strategy counts (`ReplicaState.in_progress_cpu`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Scorer

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class CpuUsage(Scorer):
    """Reported CPU usage (in vCPUs) plus this replica's creates in progress on the node, where
    its strategy counts them (as every scorer and filter does: one rule for what is taken)."""

    name = "cpu_usage"

    def scores(
        self, replica: ReplicaState, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        views = replica.strategy.views
        return [views[n].cpu_percent / 100.0 + replica.in_progress_cpu(n) for n in candidates]
