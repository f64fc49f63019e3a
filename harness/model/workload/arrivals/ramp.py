"""`ramp`: Poisson arrivals at a rate that runs in straight lines between points."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.workload.arrivals.arrival_kind import Piece
from harness.model.workload.arrivals.profiled import Profiled, points

if TYPE_CHECKING:
    from harness.model.workload.arrivals.arrival_keys import ArrivalKeys


def _line(t0: float, r0: float, t1: float, r1: float) -> Callable[[float], float]:
    """The rate at t on the straight line from (t0, r0) to (t1, r1)."""
    slope = (r1 - r0) / (t1 - t0)
    return lambda t: r0 + slope * (t - t0)


@mypyc_attr(allow_interpreted_subclasses=True)
class Ramp(Profiled):
    """Poisson arrivals whose rate runs in a straight line from each point of the profile
    (`profile_s`, `profile_rates`) to the next; the last rate holds to the end."""

    name = "ramp"

    @classmethod
    def pieces(cls, spec: ArrivalKeys, duration: float) -> Iterator[Piece]:
        for t0, r0, t1, r1 in points(spec, duration):
            rate = None if r0 == r1 else _line(t0, r0, t1, r1)
            end = min(t1, duration)
            yield t0, end, max(r0, r1 if rate is None else rate(end)), rate
