"""`excluded`: not a node this request's create already failed on (upstream retries elsewhere)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Filter

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class Excluded(Filter):
    """Not a node this request's create already failed on (other than ResourceExhausted)."""

    name = "excluded"

    def applies(self, replica: ReplicaState, req: CreateRequest) -> bool:
        return req.excluded is not None

    def passes(self, replica: ReplicaState, node: int, req: CreateRequest, now: float) -> bool:
        excluded = req.excluded
        return excluded is None or node not in excluded

    def why_not(self, replica: ReplicaState, node: int, req: CreateRequest) -> str:
        return f"the create already failed on node {node}"
