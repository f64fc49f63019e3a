"""`pareto`: heavy-tailed lifetimes (`lifetime_alpha`)."""

from __future__ import annotations

import math
import random

from mypy_extensions import mypyc_attr

from harness.model.workload.distributions.distribution import Distribution


@mypyc_attr(allow_interpreted_subclasses=True)
class Pareto(Distribution):
    """Pareto (type I) with tail index alpha = `lifetime_alpha` and the scale (the shortest
    lifetime) x_m = lifetime_s (alpha - 1) / alpha, so that the mean is `lifetime_s`;
    P(lifetime > x) = (x_m / x)^alpha for x >= x_m."""

    name = "pareto"
    shape_key = "lifetime_alpha"

    def __init__(self, mean: float, spread: float = 0.0) -> None:
        super().__init__(mean, spread)
        self.alpha = spread
        self.scale = self.mean * (self.alpha - 1) / self.alpha

    def draw(self, rng: random.Random) -> float:
        return self.scale * rng.paretovariate(self.alpha)

    def support(self) -> tuple[float, float]:
        return self.scale, math.inf
