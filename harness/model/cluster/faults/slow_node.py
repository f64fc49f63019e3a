"""`slow_node`: every RPC to the node takes longer."""

from __future__ import annotations

from harness.model.cluster.faults.fault_kind import FaultKind


class SlowNode(FaultKind):
    name = "slow_node"
    keys = ("node", "latency_ms", "at_s", "until_s")
    needs_node = True
    what = "every RPC to the node takes latency_ms longer"
    slows = True
