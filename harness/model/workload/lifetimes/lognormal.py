"""`lognormal`: lifetimes whose log is normal (`lifetime_sigma`)."""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.workload.lifetimes.distribution import Lifetime

if TYPE_CHECKING:
    from harness.model.workload.workload_keys import SandboxSpec


@mypyc_attr(allow_interpreted_subclasses=True)
class LogNormal(Lifetime):
    """exp(N(mu, sigma^2)) with mu chosen so that the mean is `lifetime_s`:
    mu = ln(lifetime_s) - sigma^2 / 2; the median is exp(mu)."""

    name = "lognormal"

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self.sigma = spec.lifetime_sigma
        self.mu = math.log(self.mean) - self.sigma**2 / 2

    def draw(self, rng: random.Random) -> float:
        return rng.lognormvariate(self.mu, self.sigma)
