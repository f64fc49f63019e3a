"""`pareto`: heavy-tailed lifetimes (`lifetime_alpha`)."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.workload.lifetimes.distribution import Lifetime

if TYPE_CHECKING:
    from harness.model.workload.workload_keys import SandboxSpec


@mypyc_attr(allow_interpreted_subclasses=True)
class Pareto(Lifetime):
    """Pareto (type I) with tail index alpha = `lifetime_alpha` and the scale (the shortest
    lifetime) x_m = lifetime_s (alpha - 1) / alpha, so that the mean is `lifetime_s`;
    P(lifetime > x) = (x_m / x)^alpha for x >= x_m."""

    name = "pareto"

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self.alpha = spec.lifetime_alpha
        self.scale = self.mean * (self.alpha - 1) / self.alpha

    def draw(self, rng: random.Random) -> float:
        return self.scale * rng.paretovariate(self.alpha)
