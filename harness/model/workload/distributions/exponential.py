"""`exponential`: memoryless lifetimes."""

from __future__ import annotations

import math
import random

from mypy_extensions import mypyc_attr

from harness.model.random_streams import expovariate
from harness.model.workload.distributions.distribution import Distribution


@mypyc_attr(allow_interpreted_subclasses=True)
class Exponential(Distribution):
    """Memoryless lifetimes with mean `lifetime_s`."""

    name = "exponential"

    def __init__(self, mean: float, spread: float = 0.0) -> None:
        super().__init__(mean, spread)
        self.rate = 1.0 / self.mean

    def draw(self, rng: random.Random) -> float:
        return expovariate(rng, self.rate)

    def support(self) -> tuple[float, float]:
        return 0.0, math.inf
