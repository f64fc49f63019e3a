"""`uniform`: a size of mean x (1 + U(-s, s)), upstream's "mean with a relative variance"."""

from __future__ import annotations

import random

from mypy_extensions import mypyc_attr

from harness.model.workload.distributions.distribution import Distribution


@mypyc_attr(allow_interpreted_subclasses=True)
class Uniform(Distribution):
    """A size of mean x (1 + U(-s, s)), s the spread: upstream's "mean with a relative
    variance"."""

    name = "uniform"

    def __init__(self, mean: float, spread: float = 0.0) -> None:
        super().__init__(mean, spread)
        self.lo = mean * (1.0 - spread)
        self.span = 2.0 * spread * mean

    def draw(self, rng: random.Random) -> float:
        # `mean * (1 + U(-s, s))` with U as `a + (b - a) * random()`, as Go's and Python's are.
        return self.lo + self.span * rng.random()

    def support(self) -> tuple[float, float]:
        return self.lo, self.lo + self.span
