"""`lowest`: the reference scheduler's selection, the lowest score (with the `best_of_k`
sampler and the `reference` scorer, its Best-of-K)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Selector

if TYPE_CHECKING:
    from harness.model.scheduling.replica_state import ReplicaState


@mypyc_attr(allow_interpreted_subclasses=True)
class Lowest(Selector):
    """The lowest score, strict `<`: on a tie the candidate sampled first wins."""

    name = "lowest"

    def select(
        self, replica: ReplicaState, candidates: list[int], scores: list[float]
    ) -> int | None:
        # The first of the lowest scores, by strict `<`, in one pass: what min() then index()
        # find, without two generic calls (compiled, the loop is plain float comparisons).
        if not candidates:
            return None
        best, low = 0, scores[0]
        for i in range(1, len(scores)):
            if scores[i] < low:
                best, low = i, scores[i]
        return candidates[best]
