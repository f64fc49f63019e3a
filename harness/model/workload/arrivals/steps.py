"""`steps`: Poisson arrivals at a rate that changes in steps."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.workload.arrivals.arrival_kind import Piece
from harness.model.workload.arrivals.profiled import Profiled, points

if TYPE_CHECKING:
    from harness.model.workload.arrivals.arrival_keys import ArrivalKeys


@mypyc_attr(allow_interpreted_subclasses=True)
class Steps(Profiled):
    """Poisson arrivals at `profile_rates[i]` per second from `profile_s[i]` until the next
    point; the last rate holds to the end."""

    name = "steps"

    @classmethod
    def pieces(cls, spec: ArrivalKeys, duration: float) -> Iterator[Piece]:
        for t0, r0, t1, _ in points(spec, duration):
            yield t0, min(t1, duration), r0, None
