"""What the kinds whose rate follows a profile of points share (`steps`, `ramp`): the points,
their checks, and Poisson arrivals piece by piece."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.tunables import ConfigError
from harness.model.workload.arrivals.arrival_kind import ArrivalKind, Piece, thinned, trapezoids

if TYPE_CHECKING:
    from harness.model.workload.arrivals.arrival_keys import ArrivalKeys


def points(spec: ArrivalKeys, duration: float) -> Iterator[tuple[float, float, float, float]]:
    """(t0, rate at t0, t1, rate at t1) for each span of the profile that starts before the
    end, t1 cut at the end; the last point's rate holds to the end."""
    times, rates = spec.profile_s, spec.profile_rates
    for i, (t0, r0) in enumerate(zip(times, rates, strict=True)):
        if t0 >= duration:
            return
        last = i + 1 == len(times)
        t1, r1 = (duration, r0) if last else (times[i + 1], rates[i + 1])
        yield t0, r0, t1, r1


@mypyc_attr(allow_interpreted_subclasses=True)
class Profiled(ArrivalKind):
    """Poisson arrivals whose rate follows the profile (`profile_s`, `profile_rates`), piece by
    piece: a subclass says how the rate runs within a piece (`pieces`)."""

    rate_key = "workload.profile_rates"

    @classmethod
    def pieces(cls, spec: ArrivalKeys, duration: float) -> Iterator[Piece]:
        raise NotImplementedError

    @classmethod
    def times(cls, spec: ArrivalKeys, duration: float, rng: random.Random) -> Iterator[float]:
        return thinned(cls.pieces(spec, duration), rng)

    @classmethod
    def expected(cls, spec: ArrivalKeys, duration: float) -> float:
        return trapezoids(cls.pieces(spec, duration))

    @classmethod
    def check(cls, spec: ArrivalKeys, duration: float) -> None:
        """The points: times from 0 on, increasing, a rate each, and some creates before the
        end."""
        times, rates = spec.profile_s, spec.profile_rates
        if not times:
            raise ConfigError(
                "workload.profile_s",
                f"arrival {cls.name} needs the times of its points, e.g. [0, 10]",
            )
        if len(rates) != len(times):
            raise ConfigError(
                "workload.profile_rates",
                f"has {len(rates)} rates for the {len(times)} points of workload.profile_s",
            )
        if times[0] != 0:
            raise ConfigError("workload.profile_s", f"must start at 0, got {times[0]:g}")
        for before, after in itertools.pairwise(times):
            if after <= before:
                raise ConfigError(
                    "workload.profile_s", f"must increase, got {after:g} after {before:g}"
                )
        if cls.expected(spec, duration) <= 0:
            raise ConfigError(
                "workload.profile_rates",
                f"are 0 until run.duration_s {duration:g}: the run would send nothing",
            )
