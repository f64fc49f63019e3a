"""`cpu_usage`: the least-busy designs' score, reported usage plus in-progress vCPUs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Scorer

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class CpuUsage(Scorer):
    """Reported CPU usage (in vCPUs) plus this replica's creates in progress on the node."""

    name = "cpu_usage"

    def scores(
        self, scheduler: ReplicaState, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        views, pending = scheduler.ledger.views, scheduler.pending_cpu
        return [views[n].cpu_percent / 100.0 + pending[n] for n in candidates]
