"""`cpu_family`: upstream's CPU compatibility check."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Filter

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class CpuFamily(Filter):
    """A node of the CPU family the sandbox's template was built on (`Shape.cpu_family`), as
    upstream's CPU compatibility check; a sandbox that names none goes anywhere."""

    name = "cpu_family"
    per_shape = True

    def applies(self, replica: ReplicaState, req: CreateRequest) -> bool:
        return bool(req.shape.cpu_family)

    def passes(self, replica: ReplicaState, node: int, req: CreateRequest, now: float) -> bool:
        return replica.nodes[node].cpu_family == req.shape.cpu_family

    def why_not(self, replica: ReplicaState, node: int, req: CreateRequest) -> str:
        family = replica.nodes[node].cpu_family
        return f"needs CPU family {req.shape.cpu_family!r}; node {node} is {family!r}"
