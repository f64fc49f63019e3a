"""`rpc_error`: a share of create or kill RPCs fail without the node acting."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.model.cluster.faults.fault_kind import Counter, FaultKind, Where
from harness.model.cluster.node import Node, Outcome

if TYPE_CHECKING:
    from harness.model.cluster.faults.fault_keys import FaultSpec
    from harness.model.workload.request import Shape


class RpcError(FaultKind):
    name = "rpc_error"
    keys = ("rpc", "error", "fraction", "node", "at_s", "until_s")
    what = "a fraction of create or kill RPCs fail without the node acting"
    counters = (
        Counter(
            "fault_rpc_failed", Where.RPC, "RPCs failed by an `rpc_error` fault (error `failed`)."
        ),
        Counter(
            "fault_rpc_exhausted",
            Where.RPC,
            "RPCs answered ResourceExhausted by an `rpc_error` fault.",
        ),
    )

    @staticmethod
    def strikes(spec: FaultSpec, where: str) -> bool:
        return where == spec.rpc

    @staticmethod
    def on_rpc(
        spec: FaultSpec,
        node: Node,
        sandbox_id: int,
        shape: Shape | None,
        counts: dict[str, int],
    ) -> Outcome:
        if spec.error == "resource_exhausted":
            counts["fault_rpc_exhausted"] += 1
            return Outcome.RESOURCE_EXHAUSTED
        counts["fault_rpc_failed"] += 1
        return Outcome.FAILED
