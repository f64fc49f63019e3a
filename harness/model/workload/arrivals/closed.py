"""`closed`: a fixed number of clients, each creating again after its kill."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.workload.arrivals.arrival_kind import ArrivalKind

if TYPE_CHECKING:
    from harness.model.workload.arrivals.arrival_keys import ArrivalKeys


@mypyc_attr(allow_interpreted_subclasses=True)
class Closed(ArrivalKind):
    """`clients` clients, each: create, hold for its lifetime, kill, think, create again."""

    name = "closed"
    closed = True

    @classmethod
    def starts(cls, spec: ArrivalKeys, rng: random.Random) -> list[float]:
        """Start times of the clients, spread uniformly over the ramp, in order."""
        ramp = spec.ramp_s
        return sorted(rng.uniform(0.0, ramp) if ramp else 0.0 for _ in range(spec.clients))
