"""Per-create variety: a sandbox's vCPUs, memory, usage ratio and lifetime, each either the
template's fixed value or drawn per create around it.

Upstream's second benchmark (`BenchmarkPlacementComparison`) makes every sandbox differ:
vCPU = `max(int(4 * (1 + U(-0.8, 0.8))), 1)`, a usage ratio clipped to [0.1, 1], a lifetime
that may be negative. Here each of the four quantities has the keys `<q>_draw` (the kind
below), `<q>_spread`, `<q>_clip` ([lo, hi], or empty) and, for vCPUs and memory,
`<q>_integer` (upstream's truncation, `max(int(x), 1)`); the template's own key (`vcpu`,
`memory_mib`, `usage`, `lifetime_s`) is the mean. Each quantity draws from a stream of its
own (`harness.model.random_streams.Streams.sizes`), so turning one on leaves every other draw
as it was, and a workload that varies nothing draws nothing new.

Kinds (m: the mean, s: the spread):
- `fixed`: m, nothing drawn;
- `uniform`: m (1 + U(-s, s)), upstream's "mean with a relative variance";
- `normal`: N(m, (s m)^2), s the relative standard deviation;
- `lognormal`: exp(N(mu, s^2)) with mu = ln m - s^2 / 2, so that the mean is m (the
  lifetime distribution `lognormal` itself: `harness.model.workload.distributions`).
"""

from __future__ import annotations

import math
import random

from harness.model.workload.distributions import DRAWS


class Varied:
    """One quantity drawn per create: a distribution around the mean, then the clip bounds,
    then integer truncation toward zero with a floor of 1 (upstream's `max(int(x), 1)`)."""

    __slots__ = ("dist", "hi", "integer", "lo")

    def __init__(
        self, kind: str, mean: float, spread: float, clip: list[float], integer: bool
    ) -> None:
        self.dist = DRAWS.resolve(kind)(mean, spread)
        self.lo, self.hi = clip if clip else (-math.inf, math.inf)
        self.integer = integer

    def draw(self, rng: random.Random) -> float:
        x = min(max(self.dist.draw(rng), self.lo), self.hi)
        return float(max(int(x), 1)) if self.integer else x

    def support(self) -> tuple[float, float]:
        """The smallest and largest value a draw can take (infinite: unbounded)."""
        lo, hi = (min(max(v, self.lo), self.hi) for v in self.dist.support())
        if self.integer:
            lo, hi = (float(max(int(v), 1)) if math.isfinite(v) else v for v in (lo, hi))
            lo = max(lo, 1.0)
        return lo, hi


QUANTITIES = ("vcpu", "memory", "usage", "lifetime")
"""The quantities that may vary, each with the keys `<q>_draw`, `<q>_spread`, `<q>_clip`."""
INTEGER = ("vcpu", "memory")
"""Those with a `<q>_integer` key as well."""
MEAN_KEY = {"vcpu": "vcpu", "memory": "memory_mib", "usage": "usage", "lifetime": "lifetime_s"}
"""The template key that is each quantity's mean (and its fixed value)."""


def varied(spec: object, quantity: str) -> Varied | None:
    """The per-create draw of `quantity` that a sandbox spec asks for; None: fixed."""
    kind = getattr(spec, f"{quantity}_draw")
    if not DRAWS.resolve(kind).varies:
        return None
    integer = getattr(spec, f"{quantity}_integer", False)
    mean = getattr(spec, MEAN_KEY[quantity])
    return Varied(
        kind, mean, getattr(spec, f"{quantity}_spread"), getattr(spec, f"{quantity}_clip"), integer
    )
