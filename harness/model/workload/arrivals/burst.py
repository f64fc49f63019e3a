"""`burst`: every create at one instant."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.tunables import ConfigError
from harness.model.workload.arrivals.arrival_kind import ArrivalKind

if TYPE_CHECKING:
    from harness.model.workload.arrivals.arrival_keys import ArrivalKeys


@mypyc_attr(allow_interpreted_subclasses=True)
class Burst(ArrivalKind):
    """`burst` creates at once at `burst_at_s`."""

    name = "burst"
    at_once = True
    rate_key = "workload.burst"

    @classmethod
    def times(cls, spec: ArrivalKeys, duration: float, rng: random.Random) -> Iterator[float]:
        if spec.burst_at_s < duration:
            yield from (spec.burst_at_s for _ in range(spec.burst))

    @classmethod
    def expected(cls, spec: ArrivalKeys, duration: float) -> float:
        return float(spec.burst) if spec.burst_at_s < duration else 0.0

    @classmethod
    def start(cls, spec: ArrivalKeys) -> float:
        return spec.burst_at_s

    @classmethod
    def check(cls, spec: ArrivalKeys, duration: float) -> None:
        if spec.burst_at_s >= duration:
            raise ConfigError(
                "workload.burst_at_s",
                f"{spec.burst_at_s:g} is not before run.duration_s {duration:g}: "
                "the run would send nothing",
            )
