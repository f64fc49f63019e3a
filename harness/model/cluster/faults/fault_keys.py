"""The keys of a `[[faults]]` entry (`FaultSpec`): one dataclass for every kind, each kind
taking the keys it declares (`FaultKind.keys`).

Apart from the kinds, which read it, and naming their registry by path, so neither imports
the other."""

from __future__ import annotations

from dataclasses import dataclass

from harness.model.tunables import key


@dataclass(frozen=True)
class FaultSpec:
    kind: str = key(
        "crash",
        "crash, rpc_error, timeout (create RPCs), lost_reports or slow_node.",
        choices="harness.model.cluster.faults.kinds:FAULT_KINDS",
    )
    at_s: float = key(0.0, "When the fault starts (model seconds).", ge=0)
    until_s: float | None = key(
        None, 'When it ends; a crashed node comes back empty then; "none": never.', ge=0
    )
    node: int | None = key(
        None, 'Target node (required for crash and slow_node); "none": every node.', ge=0
    )
    rpc: str = key(
        "create", "rpc_error: which RPC fails, create or kill.", choices=("create", "kill")
    )
    error: str = key(
        "failed",
        "rpc_error: failed (transient: exclude, attempt + 1) or resource_exhausted (skip).",
        choices=("failed", "resource_exhausted"),
    )
    fraction: float = key(
        1.0, "Share of the RPCs (or reports) in the window that fail, drawn per RPC.", ge=0, le=1
    )
    latency_ms: float = key(10.0, "slow_node: extra round trip of every RPC to it.", gt=0)

    def active(self, node_id: int, now: float) -> bool:
        return (
            (self.node is None or self.node == node_id)
            and now >= self.at_s
            and (self.until_s is None or now < self.until_s)
        )
