"""`fixed`: the mean itself, nothing drawn (the default lifetime and size)."""

from __future__ import annotations

import random

from mypy_extensions import mypyc_attr

from harness.model.workload.distributions.distribution import Distribution


@mypyc_attr(allow_interpreted_subclasses=True)
class Fixed(Distribution):
    """Every sandbox lives exactly `lifetime_s`, or has exactly its template's size."""

    name = "fixed"
    varies = False

    def draw(self, rng: random.Random) -> float:
        return self.mean

    def support(self) -> tuple[float, float]:
        return self.mean, self.mean
