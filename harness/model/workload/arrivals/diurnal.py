"""`diurnal`: Poisson arrivals whose rate follows a daily cycle."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.workload.arrivals.arrival_kind import ArrivalKind, thinned

if TYPE_CHECKING:
    from harness.model.workload.arrivals.arrival_keys import ArrivalKeys


@mypyc_attr(allow_interpreted_subclasses=True)
class Diurnal(ArrivalKind):
    """Poisson arrivals at rate_per_s x (1 + amplitude x cos(2 pi (t - peak) / period)): a
    mean of `rate_per_s` over whole periods, the highest rate at `diurnal_peak_s` and every
    period after, the lowest half a period away."""

    name = "diurnal"

    @classmethod
    def rate(cls, spec: ArrivalKeys) -> Callable[[float], float]:
        mean, swing = spec.rate_per_s, spec.diurnal_amplitude
        omega, peak = 2 * math.pi / spec.diurnal_period_s, spec.diurnal_peak_s
        return lambda t: mean * (1.0 + swing * math.cos(omega * (t - peak)))

    @classmethod
    def times(cls, spec: ArrivalKeys, duration: float, rng: random.Random) -> Iterator[float]:
        top = spec.rate_per_s * (1.0 + spec.diurnal_amplitude)
        rate = cls.rate(spec) if spec.diurnal_amplitude else None
        return thinned([(0.0, duration, top, rate)], rng)

    @classmethod
    def expected(cls, spec: ArrivalKeys, duration: float) -> float:
        """The integral of the rate over [0, duration]."""
        omega, peak = 2 * math.pi / spec.diurnal_period_s, spec.diurnal_peak_s
        swing = math.sin(omega * (duration - peak)) + math.sin(omega * peak)
        return spec.rate_per_s * (duration + spec.diurnal_amplitude * swing / omega)
