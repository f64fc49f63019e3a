"""`fixed`: every sandbox lives exactly the mean."""

from __future__ import annotations

import random

from mypy_extensions import mypyc_attr

from harness.model.workload.lifetimes.distribution import Lifetime


@mypyc_attr(allow_interpreted_subclasses=True)
class Fixed(Lifetime):
    """Every sandbox lives exactly `lifetime_s`; nothing is drawn."""

    name = "fixed"
    exact = True

    def draw(self, rng: random.Random) -> float:
        return self.mean
