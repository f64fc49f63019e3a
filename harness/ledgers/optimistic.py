"""`optimistic`: the merged fix. In-progress counting plus OptimisticAdd and OptimisticRemove.

The add happens after the create RPC succeeds, so a report taken after the node created the
sandbox but applied before the answer arrives counts it twice until the next report.
"""

from harness.ledger import Ledger
from harness.node import Outcome


class OptimisticLedger(Ledger):
    name = "optimistic"
    counts_in_progress = True

    def create_finished(
        self,
        node: int,
        sandbox_id: int,
        vcpu: float,
        memory_mib: float,
        outcome: Outcome,
        now: float,
    ) -> None:
        if outcome is Outcome.OK:
            view = self.views[node]
            view.cpu_allocated += vcpu
            view.memory_allocated_mib += memory_mib

    def kill_finished(
        self,
        node: int,
        sandbox_id: int,
        vcpu: float,
        memory_mib: float,
        outcome: Outcome,
        now: float,
    ) -> None:
        if outcome is not Outcome.OK:
            return
        view = self.views[node]
        # Underflow guard as upstream: skip when the subtraction would go below zero.
        if view.cpu_allocated >= vcpu:
            view.cpu_allocated -= vcpu
        if view.memory_allocated_mib >= memory_mib:
            view.memory_allocated_mib -= memory_mib
