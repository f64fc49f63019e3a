"""`sync_response`: the create and kill answers carry the node's fresh report (fix a).

The answer's report is applied like a periodic one when it is newer than the view; reports are
ordered by sequence number, so an older one arriving late is dropped instead of overwriting a
fresher view. No optimistic entries: the node's own numbers already include the call.
"""

from mypy_extensions import mypyc_attr

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import Outcome
from harness.model.scheduling.strategy import Strategy
from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class SyncResponseStrategy(Strategy):
    name = "sync_response"
    counts_in_progress = True
    wants_response_report = True
    drops_old_reports = True

    def create_finished(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None
    ) -> None:
        if response is not None:
            self.apply_report(response, now)

    def kill_finished(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None
    ) -> None:
        if response is not None:
            self.apply_report(response, now)
