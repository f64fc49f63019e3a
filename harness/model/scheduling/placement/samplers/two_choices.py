"""`two_choices`: the power of two choices (the `power_of_two` algorithm)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.samplers.best_of_k import BestOfK

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec


@mypyc_attr(allow_interpreted_subclasses=True)
class TwoChoices(BestOfK):
    """Two eligible nodes, uniformly without replacement: Best-of-K with K = 2, whatever
    `placement.k` says."""

    name = "two_choices"

    def __init__(self, rules: PlacementSpec) -> None:
        super().__init__(rules)
        self.k = 2
