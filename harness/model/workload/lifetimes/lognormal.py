"""`lognormal`: lifetimes whose log is normal (`lifetime_sigma`)."""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.workload.lifetimes.distribution import Lifetime

if TYPE_CHECKING:
    from harness.model.workload.workload_keys import SandboxSpec


def mean_preserving_mu(mean: float, sigma: float) -> float:
    """mu of exp(N(mu, sigma^2)) whose mean is `mean`: ln(mean) - sigma^2 / 2 (-inf for a
    mean of 0 or less, every draw then 0). The one lognormal of the workload: lifetimes and
    per-create draws (`harness.model.workload.variety`) both take it."""
    return math.log(mean) - sigma**2 / 2 if mean > 0 else -math.inf


@mypyc_attr(allow_interpreted_subclasses=True)
class LogNormal(Lifetime):
    """exp(N(mu, sigma^2)) with mu chosen so that the mean is `lifetime_s`:
    mu = ln(lifetime_s) - sigma^2 / 2; the median is exp(mu)."""

    name = "lognormal"

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self.sigma = spec.lifetime_sigma
        self.mu = mean_preserving_mu(self.mean, self.sigma)

    def draw(self, rng: random.Random) -> float:
        return rng.lognormvariate(self.mu, self.sigma)
