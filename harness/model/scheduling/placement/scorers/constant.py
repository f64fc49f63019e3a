"""`constant`: no preference, so the sampler alone decides (the `random` and `round_robin`
algorithms)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Scorer

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class Constant(Scorer):
    """The same score for every node: the sampler alone decides (with `lowest`, its first)."""

    name = "constant"

    def scores(
        self, replica: ReplicaState, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        return [0.0] * len(candidates)
