"""`round_robin`: each replica walks the nodes in order (the `round_robin` algorithm)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Eligible, Sampler

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec
    from harness.model.scheduling.replica_state import ReplicaState


@mypyc_attr(allow_interpreted_subclasses=True)
class RoundRobin(Sampler):
    """The next eligible node after the last one this replica sampled, in node order."""

    name = "round_robin"

    def __init__(self, rules: PlacementSpec) -> None:
        super().__init__(rules)
        self.next = 0

    def candidates(self, n_nodes: int) -> int | None:
        return min(1, n_nodes)

    def sample(self, replica: ReplicaState, eligible: Eligible | None) -> list[int]:
        n = replica.n
        for step in range(n):
            node = (self.next + step) % n
            if eligible is None or eligible(node):
                self.next = node + 1
                return [node]
        return []
