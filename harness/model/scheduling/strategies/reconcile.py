"""`reconcile`: reports list sandbox IDs; own calls stay unconfirmed until a report shows them
(fix b, the one upstream preferred).

The view of a node (vCPUs and memory) is its last report, plus this scheduler's successful
creates the report does not list yet, minus its successful kills the report still lists. A
create entry is dropped once a report lists its ID, or once a report taken after the create's
answer does not: the node acted before it answered, so that absence means the sandbox is gone
(lost in a crash, or killed before the kill's answer arrived). A kill entry is dropped once a
report taken after the kill's answer no longer lists it (a report taken before the create does
not list it either, so absence alone proves nothing). A failed kill changes nothing: the node
may be down (sandbox gone) or the RPC may have failed with the sandbox still running, and only a
later report tells which. Reports are ordered by sequence number and older ones are dropped. The
only error left is the calls in flight: a create the node has done but whose answer has not
arrived, or a kill likewise (and, on a crashed node, its lost sandboxes until it reports again).

Taking "after the answer" from the report's `taken_at` assumes node and scheduler share a
clock, as both engines do; a production version would echo a sequence number in the answer.
"""

from __future__ import annotations

from mypy_extensions import mypyc_attr

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import Outcome
from harness.model.scheduling.strategy import Strategy
from harness.model.tunables import PluginSettings
from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class ReconcileStrategy(Strategy):
    name = "reconcile"
    counts_in_progress = True
    wants_sandbox_ids = True
    drops_old_reports = True
    exact_when_drained = True

    def __init__(self, cpu_counts: list[int], settings: PluginSettings | None = None) -> None:
        super().__init__(cpu_counts, settings)
        # Per node: unconfirmed creates {id: (vCPU, memory, answered_at)}, none listed by the
        # view's report; unconfirmed kills {id: (vCPU, memory, answered_at)}.
        self.creates: list[dict[int, tuple[float, float, float]]] = [{} for _ in cpu_counts]
        self.kills: list[dict[int, tuple[float, float, float]]] = [{} for _ in cpu_counts]

    def report_applied(self, report: Report, now: float) -> None:
        node = report.node_id
        view = self.views[node]
        listed = view.sandbox_ids
        taken_at = report.taken_at
        creates = self.creates[node]
        # Listed: the report counts it. Not listed by a report taken after the answer: gone.
        for sid in [s for s, (_, _, at) in creates.items() if s in listed or taken_at >= at]:
            del creates[sid]
        kills = self.kills[node]
        for sid in [s for s, (_, _, at) in kills.items() if s not in listed and taken_at >= at]:
            del kills[sid]
        # Sums from 0.0: the same floats as from sum()'s int 0, and compiled, a float total
        # (mypyc keeps sum()'s int start as the total's type).
        view.cpu_allocated += sum((vcpu for vcpu, _, _ in creates.values()), 0.0) - sum(
            (vcpu for sid, (vcpu, _, _) in kills.items() if sid in listed), 0.0
        )
        view.memory_allocated_mib += sum((mib for _, mib, _ in creates.values()), 0.0) - sum(
            (mib for sid, (_, mib, _) in kills.items() if sid in listed), 0.0
        )

    def create_finished(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None
    ) -> None:
        view = self.views[req.node]
        if outcome is Outcome.OK and req.sandbox_id not in view.sandbox_ids:
            self.creates[req.node][req.sandbox_id] = (req.vcpu, req.memory_mib, now)
            view.cpu_allocated += req.vcpu
            view.memory_allocated_mib += req.memory_mib

    def kill_finished(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None
    ) -> None:
        if outcome is not Outcome.OK:
            return  # gone or still running: the next report taken after the answer tells
        view = self.views[req.node]
        unconfirmed = self.creates[req.node].pop(req.sandbox_id, None) is not None
        if unconfirmed or req.sandbox_id in view.sandbox_ids:
            view.cpu_allocated -= req.vcpu
            view.memory_allocated_mib -= req.memory_mib
        self.kills[req.node][req.sandbox_id] = (req.vcpu, req.memory_mib, now)
