"""`every_node`: every eligible node, in node order (a full scan, as least-busy and bin-packing
designs look at the whole cluster)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Eligible, Sampler

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState


@mypyc_attr(allow_interpreted_subclasses=True)
class EveryNode(Sampler):
    """Every eligible node, in node order (a full scan)."""

    name = "every_node"

    def candidates(self, n_nodes: int) -> int | None:
        return n_nodes

    def sample(self, replica: ReplicaState, eligible: Eligible | None) -> list[int]:
        nodes = range(replica.n)
        return list(nodes) if eligible is None else [n for n in nodes if eligible(n)]
