"""`constant`: the reference's ticker."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.workload.arrivals.arrival_kind import ArrivalKind

if TYPE_CHECKING:
    from harness.model.workload.arrivals.arrival_keys import ArrivalKeys


@mypyc_attr(allow_interpreted_subclasses=True)
class Constant(ArrivalKind):
    """One create every 1/rate seconds from t = 0 (the reference's ticker)."""

    name = "constant"

    @classmethod
    def times(cls, spec: ArrivalKeys, duration: float, rng: random.Random) -> Iterator[float]:
        i, rate = 0, spec.rate_per_s  # the spec is interpreted: read once, not per create
        while (t := i / rate) < duration:
            yield t
            i += 1

    @classmethod
    def expected(cls, spec: ArrivalKeys, duration: float) -> float:
        return spec.rate_per_s * duration
