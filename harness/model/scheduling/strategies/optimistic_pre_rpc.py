"""`optimistic_pre_rpc`: the add happens before the create RPC instead of after it.

A report taken before the node created the sandbox but applied after the add erases it: the
sandbox is invisible until the next report (the erase race), and the herd comes back. A create
that fails takes its add back."""

from mypy_extensions import mypyc_attr

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import Outcome
from harness.model.scheduling.strategies.optimistic import OptimisticStrategy
from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class OptimisticPreRpcStrategy(OptimisticStrategy):
    name = "optimistic_pre_rpc"

    def create_started(self, req: CreateRequest, now: float) -> None:
        self.add(req)

    def create_finished(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None
    ) -> None:
        if outcome is not Outcome.OK:
            self.remove(req)
