"""`poisson`: creates at a constant rate, exponential gaps."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.workload.arrivals.arrival_kind import ArrivalKind, thinned

if TYPE_CHECKING:
    from harness.model.workload.arrivals.arrival_keys import ArrivalKeys


@mypyc_attr(allow_interpreted_subclasses=True)
class Poisson(ArrivalKind):
    """Exponential gaps with mean 1/rate."""

    name = "poisson"

    @classmethod
    def times(cls, spec: ArrivalKeys, duration: float, rng: random.Random) -> Iterator[float]:
        return thinned([(0.0, duration, spec.rate_per_s, None)], rng)

    @classmethod
    def expected(cls, spec: ArrivalKeys, duration: float) -> float:
        return spec.rate_per_s * duration
