"""Arrival kinds by name (`ARRIVALS`): one file per kind, each an `ArrivalKind` (as locust's
wait-time callables are small and named). A package adds one under the entry-point group
`herd_harness.arrivals`."""

from __future__ import annotations

from harness.model.registry import Registry
from harness.model.workload.arrivals.arrival_kind import ArrivalKind
from harness.model.workload.arrivals.burst import Burst
from harness.model.workload.arrivals.closed import Closed
from harness.model.workload.arrivals.constant_rate import Constant
from harness.model.workload.arrivals.diurnal import Diurnal
from harness.model.workload.arrivals.poisson import Poisson
from harness.model.workload.arrivals.ramp import Ramp
from harness.model.workload.arrivals.steps import Steps
from harness.model.workload.arrivals.trace import Trace

ARRIVALS = Registry(
    "arrivals",
    "arrival",
    ArrivalKind,
    (Constant, Poisson, Burst, Steps, Ramp, Diurnal, Trace, Closed),
)
"""Arrival kinds by name (`workload.arrival`)."""
