"""The keys the arrival kinds read (`ArrivalKeys`), a part of the `[workload]` section
(`harness.model.workload.workload_keys.WorkloadSpec`, which adds `arrival`, the key that picks
the kind): declared here, apart from that choice, so the kinds read their keys without
importing the registry that lists them."""

from __future__ import annotations

from dataclasses import dataclass

from harness.model.tunables import key


@dataclass(frozen=True)
class ArrivalKeys:
    rate_per_s: float = key(20.0, "Creates per second (constant, poisson; diurnal: mean).", gt=0)
    burst: int = key(500, "Creates issued at once (burst).", ge=1)
    burst_at_s: float = key(0.0, "When the burst is issued.", ge=0)
    profile_s: list[float] = key(
        [], "steps, ramp: times of the rate profile's points, from 0, increasing.", ge=0
    )
    profile_rates: list[float] = key(
        [],
        "steps, ramp: creates per second at those points, held to the next (steps) or "
        "straight to it (ramp); the last holds to the end.",
        ge=0,
    )
    diurnal_amplitude: float = key(
        0.5, "diurnal: the rate swings this fraction of rate_per_s above and below it.", ge=0, le=1
    )
    diurnal_period_s: float = key(86400.0, "diurnal: length of one cycle.", gt=0)
    diurnal_peak_s: float = key(0.0, "diurnal: a time at which the rate is highest.", ge=0)
    clients: int = key(100, "Concurrent closed-loop clients (closed).", ge=1)
    ramp_s: float = key(0.0, "Closed-loop clients start uniformly over this window.", ge=0)
