"""`lognormal`: draws whose log is normal (a lifetime's `lifetime_sigma`, a size's spread)."""

from __future__ import annotations

import math
import random

from mypy_extensions import mypyc_attr

from harness.model.workload.distributions.distribution import Distribution


def mean_preserving_mu(mean: float, sigma: float) -> float:
    """mu of exp(N(mu, sigma^2)) whose mean is `mean`: ln(mean) - sigma^2 / 2 (-inf for a
    mean of 0 or less, every draw then 0)."""
    return math.log(mean) - sigma**2 / 2 if mean > 0 else -math.inf


@mypyc_attr(allow_interpreted_subclasses=True)
class LogNormal(Distribution):
    """exp(N(mu, sigma^2)) with mu chosen so that the mean is the mean: mu = ln(mean) -
    sigma^2 / 2; the median is exp(mu). sigma: `lifetime_sigma` for a lifetime, the spread
    (at most 10, so that a draw stays finite) for a size."""

    name = "lognormal"
    shape_key = "lifetime_sigma"

    def __init__(self, mean: float, spread: float = 0.0) -> None:
        super().__init__(mean, spread)
        self.sigma = spread
        self.mu = mean_preserving_mu(self.mean, self.sigma)

    def draw(self, rng: random.Random) -> float:
        return rng.lognormvariate(self.mu, self.sigma)

    def support(self) -> tuple[float, float]:
        return (0.0, math.inf) if self.sigma > 0 else (math.exp(self.mu),) * 2
