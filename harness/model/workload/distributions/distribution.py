"""What a distribution is (`Distribution`): a draw around a mean, for a sandbox's lifetime
(`lifetime_dist`, the registry `LIFETIMES`) or for one of its sizes per create (`<q>_draw`,
`DRAWS`). The two registries share these classes, so `fixed` and `lognormal` are one design each.

Every distribution is parameterised by its mean, so that changing the shape keeps the load a
workload offers (arrival rate x mean lifetime, or the mean size) the same, and by one number
more, its `spread` (its shape): as a size draw `<q>_spread`; as a lifetime the key its
`shape_key` names (`lognormal`: `lifetime_sigma`; `pareto`: `lifetime_alpha`). Each is built
once per template and then only draws.
"""

from __future__ import annotations

import random
from typing import ClassVar

from mypy_extensions import mypyc_attr


@mypyc_attr(allow_interpreted_subclasses=True)
class Distribution:
    """A distribution around a mean; registered by name in `LIFETIMES`, `DRAWS` or both
    (`harness.model.workload.distributions`)."""

    name: ClassVar[str] = ""
    varies: ClassVar[bool] = True
    """Whether it draws at all: one that does not (`fixed`) gives the mean itself, so a size
    keeps the template's value and opens no stream, and a lifetime estimate needs no
    distribution (`harness.wiring.demand_estimate`; the others are estimated as exponential)."""
    shape_key: ClassVar[str] = ""
    """The sandbox key that is its `spread` when it is a lifetime distribution; empty: none."""

    def __init__(self, mean: float, spread: float = 0.0) -> None:
        self.mean = mean

    def draw(self, rng: random.Random) -> float:
        raise NotImplementedError

    def support(self) -> tuple[float, float]:
        """The smallest and largest value a draw can take (infinite: unbounded)."""
        raise NotImplementedError
