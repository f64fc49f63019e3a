"""`slow_node`: every RPC to the node takes longer."""

from __future__ import annotations

from dataclasses import dataclass

from harness.model.cluster.faults.fault_kind import FaultKind
from harness.model.tunables import PluginSettings, key


@dataclass(frozen=True)
class SlowNodeSettings(PluginSettings):
    latency_ms: float = key(10.0, "Extra round trip of every RPC to the node.", gt=0)


class SlowNode(FaultKind):
    name = "slow_node"
    Settings = SlowNodeSettings
    needs_node = True
    what = "every RPC to the node takes latency_ms longer"
    slows = True
