"""`one_at_random`: one eligible node, uniformly at random (the `random` algorithm)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.samplers.best_of_k import BestOfK

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec


@mypyc_attr(allow_interpreted_subclasses=True)
class OneAtRandom(BestOfK):
    """Best-of-K with K = 1, whatever `placement.k` says."""

    name = "one_at_random"

    def __init__(self, rules: PlacementSpec) -> None:
        super().__init__(rules)
        self.k = 1
