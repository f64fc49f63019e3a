"""What clients ask for and when: arrival times, sandbox sizes and lifetimes.

Pure functions of the config and a seeded random stream, so both engines send the same
requests at the same intended times for the same seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from harness.config import WorkloadConfig


def open_loop_arrivals(w: WorkloadConfig, duration_s: float, rng: random.Random) -> Iterator[float]:
    """Intended send times of open-loop creates, in order, all before `duration_s`."""
    if w.arrival == "burst":
        if w.burst_at_s < duration_s:
            yield from (w.burst_at_s for _ in range(w.burst))
        return
    t = 0.0
    i = 0
    while True:
        if w.arrival == "constant":
            t = i / w.rate_per_s
            i += 1
        else:
            t += rng.expovariate(w.rate_per_s)
        if t >= duration_s:
            return
        yield t


def client_starts(w: WorkloadConfig, rng: random.Random) -> list[float]:
    """Start times of the closed-loop clients, spread over the ramp."""
    return sorted(rng.uniform(0.0, w.ramp_s) if w.ramp_s else 0.0 for _ in range(w.clients))


def lifetime(w: WorkloadConfig, rng: random.Random) -> float | None:
    """How long a sandbox lives before its kill; None = never killed."""
    if w.lifetime_s is None:
        return None
    if w.lifetime_dist == "exponential":
        return rng.expovariate(1.0 / w.lifetime_s)
    return w.lifetime_s
