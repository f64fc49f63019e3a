"""`optimistic_add_only`: OptimisticAdd without OptimisticRemove.

Kills are never subtracted, so between two reports the view of a node only grows: with
short-lived sandboxes the scheduler believes busy nodes are fuller than they are and sends the
load elsewhere (the skew the merged fix's remove exists to prevent).
"""

from mypy_extensions import mypyc_attr

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import Outcome
from harness.model.scheduling.strategies.optimistic import OptimisticStrategy
from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class OptimisticAddOnlyStrategy(OptimisticStrategy):
    name = "optimistic_add_only"

    def kill_finished(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None
    ) -> None:
        """No OptimisticRemove: the killed sandbox stays in the view until the next report."""
