"""`normal`: a size of N(m, (s m)^2), s the relative standard deviation."""

from __future__ import annotations

import math
import random

from mypy_extensions import mypyc_attr

from harness.model.workload.distributions.distribution import Distribution


@mypyc_attr(allow_interpreted_subclasses=True)
class Normal(Distribution):
    """A size of N(m, (s m)^2): the mean m, s (the spread) its relative standard deviation."""

    name = "normal"

    def __init__(self, mean: float, spread: float = 0.0) -> None:
        super().__init__(mean, spread)
        self.sigma = spread * abs(mean)

    def draw(self, rng: random.Random) -> float:
        return rng.normalvariate(self.mean, self.sigma)

    def support(self) -> tuple[float, float]:
        if self.sigma == 0:
            return self.mean, self.mean
        return -math.inf, math.inf
