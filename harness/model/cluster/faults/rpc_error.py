"""`rpc_error`: a share of create or kill RPCs fail without the node acting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.model.cluster.faults.fault_kind import Counter, FaultKind, Where
from harness.model.cluster.faults.fault_window import Drawn
from harness.model.cluster.node import Node, Outcome
from harness.model.tunables import key

if TYPE_CHECKING:
    from harness.model.cluster.faults.fault_window import FaultWindow
    from harness.model.workload.request import Shape


@dataclass(frozen=True)
class RpcErrorSettings(Drawn):
    rpc: str = key("create", "Which RPC fails, create or kill.", choices=("create", "kill"))
    error: str = key(
        "failed",
        "How it fails: failed (transient: exclude, attempt + 1) or resource_exhausted (skip).",
        choices=("failed", "resource_exhausted"),
    )


class RpcError(FaultKind):
    name = "rpc_error"
    Settings = RpcErrorSettings
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
    def strikes(spec: FaultWindow, where: str) -> bool:
        return where == spec.settings.rpc

    @staticmethod
    def on_rpc(
        spec: FaultWindow,
        node: Node,
        sandbox_id: int,
        shape: Shape | None,
        counts: dict[str, int],
    ) -> Outcome:
        if spec.settings.error == "resource_exhausted":
            counts["fault_rpc_exhausted"] += 1
            return Outcome.RESOURCE_EXHAUSTED
        counts["fault_rpc_failed"] += 1
        return Outcome.FAILED
