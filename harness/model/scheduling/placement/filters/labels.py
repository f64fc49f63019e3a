"""`labels`: upstream's label compatibility check."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Filter

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class RequiredLabels(Filter):
    """A node carrying every label the sandbox requires (`Shape.labels`), as upstream's label
    compatibility check; a sandbox that requires none goes anywhere."""

    name = "labels"
    per_shape = True

    def applies(self, replica: ReplicaState, req: CreateRequest) -> bool:
        return bool(req.shape.labels)

    def passes(self, replica: ReplicaState, node: int, req: CreateRequest, now: float) -> bool:
        return req.shape.labels <= replica.nodes[node].labels

    def why_not(self, replica: ReplicaState, node: int, req: CreateRequest) -> str:
        has = ", ".join(sorted(replica.nodes[node].labels)) or "none"
        return f"needs labels {', '.join(sorted(req.shape.labels))}; node {node} has {has}"
