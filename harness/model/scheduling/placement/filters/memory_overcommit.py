"""`memory_overcommit`: upstream's proposed memory hard filter."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Filter
from harness.model.scheduling.plugin_settings import MemoryOvercommitSettings

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class MemoryOvercommit(Filter):
    """Upstream's proposed memory hard filter: not a node whose reported allocated memory plus
    the sandbox's exceeds M x its reported total (`[placement.memory_overcommit] ratio`). Off when M
    is 0, and for a node that has reported no total. The allocated memory is the ledger's view: the
    last report, plus the strategy's own adds and removes (the `optimistic` family's)."""

    name = "memory_overcommit"
    rule = "memory"
    Settings = MemoryOvercommitSettings

    def needed(self) -> bool:
        return self.settings.ratio > 0

    def passes(self, replica: ReplicaState, node: int, req: CreateRequest, now: float) -> bool:
        view = replica.strategy.views[node]
        total = view.memory_total_mib
        limit = self.settings.ratio * total
        return not total or view.memory_allocated_mib + req.memory_mib <= limit

    def why_not(self, replica: ReplicaState, node: int, req: CreateRequest) -> str:
        view = replica.strategy.views[node]
        return (
            f"needs {mib(req.memory_mib)} MiB; node {node} has {mib(view.memory_allocated_mib)} "
            f"of {self.settings.ratio:g} x {mib(view.memory_total_mib)} MiB allocated, as the "
            "replica sees it (placement.memory_overcommit.ratio)"
        )


def mib(amount: float) -> str:
    """Memory as a person reads it: 1,081,344, or 1,536.5 (never 1.08134e+06)."""
    return f"{amount:,.0f}" if float(amount).is_integer() else f"{amount:,.1f}"
