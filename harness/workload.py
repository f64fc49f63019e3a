"""What clients ask for and when: arrival kinds, sandbox sizes and lifetimes.

Arrival kinds are small classes registered by name (as locust's wait-time callables are):
open-loop kinds give the intended send times of creates, the closed-loop kind the start time of
each client. Everything is a pure function of the spec and a seeded stream, so both engines
send the same requests at the same intended times for the same seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from harness.spec import key


class Constant:
    """One create every 1/rate seconds from t = 0 (the reference's ticker)."""

    name: ClassVar[str] = "constant"
    closed: ClassVar[bool] = False

    @staticmethod
    def times(spec: WorkloadSpec, duration: float, rng: random.Random) -> Iterator[float]:
        i = 0
        while (t := i / spec.rate_per_s) < duration:
            yield t
            i += 1


class Poisson:
    """Exponential gaps with mean 1/rate."""

    name: ClassVar[str] = "poisson"
    closed: ClassVar[bool] = False

    @staticmethod
    def times(spec: WorkloadSpec, duration: float, rng: random.Random) -> Iterator[float]:
        t = 0.0
        while (t := t + rng.expovariate(spec.rate_per_s)) < duration:
            yield t


class Burst:
    """`burst` creates at once at `burst_at_s`."""

    name: ClassVar[str] = "burst"
    closed: ClassVar[bool] = False

    @staticmethod
    def times(spec: WorkloadSpec, duration: float, rng: random.Random) -> Iterator[float]:
        if spec.burst_at_s < duration:
            yield from (spec.burst_at_s for _ in range(spec.burst))


class Closed:
    """`clients` clients, each: create, hold for its lifetime, kill, think, create again."""

    name: ClassVar[str] = "closed"
    closed: ClassVar[bool] = True

    @staticmethod
    def starts(spec: WorkloadSpec, rng: random.Random) -> list[float]:
        """Start times of the clients, spread uniformly over the ramp, in order."""
        ramp = spec.ramp_s
        return sorted(rng.uniform(0.0, ramp) if ramp else 0.0 for _ in range(spec.clients))


ARRIVALS = {cls.name: cls for cls in (Constant, Poisson, Burst, Closed)}
"""Arrival kinds by name."""


def _fixed(mean: float, rng: random.Random) -> float:
    return mean


def _exponential(mean: float, rng: random.Random) -> float:
    return rng.expovariate(1.0 / mean)


LIFETIMES = {"fixed": _fixed, "exponential": _exponential}
"""Lifetime distributions by name: (mean, stream) -> seconds."""


@dataclass(frozen=True)
class WorkloadSpec:
    arrival: str = key(
        "constant",
        "constant, poisson, burst (open loop) or closed (clients).",
        choices=ARRIVALS,
    )
    rate_per_s: float = key(20.0, "Creates per second (constant, poisson).", gt=0)
    burst: int = key(500, "Creates issued at once (burst).", ge=1)
    burst_at_s: float = key(0.0, "When the burst is issued.", ge=0)
    clients: int = key(100, "Concurrent closed-loop clients (closed).", ge=1)
    ramp_s: float = key(0.0, "Closed-loop clients start uniformly over this window.", ge=0)
    think_s: float = key(0.0, "Pause of a closed-loop client between kill and next create.", ge=0)
    failure_backoff_s: float = key(
        1.0, "Pause of a closed-loop client after a failed create.", gt=0
    )
    vcpu: float = key(1.0, "vCPUs per sandbox.", gt=0)
    memory_mib: float = key(1024.0, "Memory per sandbox (MiB).", ge=0)
    usage: float = key(1.0, "Fraction of its vCPUs a sandbox keeps busy.", ge=0, le=1)
    lifetime_s: float | None = key(60.0, 'Sandbox lifetime before its kill; "none": never.', gt=0)
    lifetime_dist: str = key(
        "fixed", "fixed, or exponential with mean lifetime_s.", choices=LIFETIMES
    )

    def lifetime(self, rng: random.Random) -> float | None:
        """How long a sandbox lives before its kill; None = never killed."""
        if self.lifetime_s is None:
            return None
        return LIFETIMES[self.lifetime_dist](self.lifetime_s, rng)
