"""`exponential`: memoryless lifetimes."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.random_streams import expovariate
from harness.model.workload.lifetimes.distribution import Lifetime

if TYPE_CHECKING:
    from harness.model.workload.workload_keys import SandboxSpec


@mypyc_attr(allow_interpreted_subclasses=True)
class Exponential(Lifetime):
    """Memoryless lifetimes with mean `lifetime_s`."""

    name = "exponential"

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self.rate = 1.0 / self.mean

    def draw(self, rng: random.Random) -> float:
        return expovariate(rng, self.rate)
