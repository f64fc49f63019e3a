"""How long a sandbox lives before its kill: lifetime distributions, small classes by name.

Every distribution is parameterised by its mean, `lifetime_s`, so that changing the shape of
the lifetimes keeps the load a workload offers (arrival rate x mean lifetime) the same. The two
with a shape take one more key: `lognormal` the standard deviation of the log of the lifetime
(`lifetime_sigma`), `pareto` the tail index (`lifetime_alpha`, above 1 for a finite mean; the
smaller, the heavier the tail). Each is built once per template and then only draws.
"""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING, ClassVar

from harness.model.random_streams import expovariate

if TYPE_CHECKING:
    from harness.model.workload.templates import SandboxSpec


def _mean(spec: SandboxSpec) -> float:
    """`lifetime_s`, which is set for every distribution but `Never`."""
    if spec.lifetime_s is None:
        raise ValueError("lifetime_s is none: sandboxes are never killed (Never)")
    return spec.lifetime_s


class Fixed:
    """Every sandbox lives exactly `lifetime_s`; nothing is drawn."""

    name: ClassVar[str] = "fixed"

    def __init__(self, spec: SandboxSpec) -> None:
        self.mean = _mean(spec)

    def draw(self, rng: random.Random) -> float:
        return self.mean


class Exponential:
    """Memoryless lifetimes with mean `lifetime_s`."""

    name: ClassVar[str] = "exponential"

    def __init__(self, spec: SandboxSpec) -> None:
        self.rate = 1.0 / _mean(spec)

    def draw(self, rng: random.Random) -> float:
        return expovariate(rng, self.rate)


class LogNormal:
    """exp(N(mu, sigma^2)) with mu chosen so that the mean is `lifetime_s`:
    mu = ln(lifetime_s) - sigma^2 / 2; the median is exp(mu)."""

    name: ClassVar[str] = "lognormal"

    def __init__(self, spec: SandboxSpec) -> None:
        self.sigma = spec.lifetime_sigma
        self.mu = math.log(_mean(spec)) - self.sigma**2 / 2

    def draw(self, rng: random.Random) -> float:
        return rng.lognormvariate(self.mu, self.sigma)


class Pareto:
    """Pareto (type I) with tail index alpha = `lifetime_alpha` and the scale (the shortest
    lifetime) x_m = lifetime_s (alpha - 1) / alpha, so that the mean is `lifetime_s`;
    P(lifetime > x) = (x_m / x)^alpha for x >= x_m."""

    name: ClassVar[str] = "pareto"

    def __init__(self, spec: SandboxSpec) -> None:
        self.alpha = spec.lifetime_alpha
        self.scale = _mean(spec) * (self.alpha - 1) / self.alpha

    def draw(self, rng: random.Random) -> float:
        return self.scale * rng.paretovariate(self.alpha)


class Never:
    """`lifetime_s = "none"`: the sandbox is never killed; nothing is drawn."""

    def draw(self, rng: random.Random) -> None:
        return None


LIFETIMES = {cls.name: cls for cls in (Fixed, Exponential, LogNormal, Pareto)}
"""Lifetime distributions by name (`lifetime_dist`)."""


def lifetime(spec: SandboxSpec) -> Fixed | Exponential | LogNormal | Pareto | Never:
    """The lifetime distribution `spec` asks for, built."""
    if spec.lifetime_s is None:
        return Never()
    return LIFETIMES[spec.lifetime_dist](spec)
