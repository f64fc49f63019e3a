"""`optimistic`: the merged fix. In-progress counting plus OptimisticAdd and OptimisticRemove.

The add happens after the create RPC succeeds, so a report taken after the node created the
sandbox but applied before the answer arrives counts it twice until the next report.
"""

from mypy_extensions import mypyc_attr

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import Outcome
from harness.model.scheduling.strategy import Strategy
from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class OptimisticStrategy(Strategy):
    name = "optimistic"
    counts_in_progress = True

    def add(self, req: CreateRequest) -> None:
        """OptimisticAdd: the sandbox's resources join the node's view at once."""
        view = self.views[req.node]
        view.cpu_allocated += req.vcpu
        view.memory_allocated_mib += req.memory_mib

    def remove(self, req: CreateRequest) -> None:
        """OptimisticRemove, with upstream's underflow guard: skip what would go below zero."""
        view = self.views[req.node]
        if view.cpu_allocated >= req.vcpu:
            view.cpu_allocated -= req.vcpu
        if view.memory_allocated_mib >= req.memory_mib:
            view.memory_allocated_mib -= req.memory_mib

    def create_finished(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None
    ) -> None:
        if outcome is Outcome.OK:
            self.add(req)

    def kill_finished(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None
    ) -> None:
        if outcome is Outcome.OK:
            self.remove(req)
