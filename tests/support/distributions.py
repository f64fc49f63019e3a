"""Distributions, checked against their theory (Kolmogorov-Smirnov)."""

from __future__ import annotations

import math

KS_999 = 1.95
"""Kolmogorov-Smirnov: sqrt(n) D exceeds 1.95 with probability 0.001 for a correct CDF."""
COUNT_SDS = 4.0


def normal_cdf(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def theory_cdf(dist: str, mean: float, sigma: float = 1.0, alpha: float = 2.0):
    """P(lifetime <= x) of each distribution with the documented parameterisation, written
    out here rather than taken from harness.model.workload.distributions."""
    if dist == "exponential":
        return lambda x: 1.0 - math.exp(-x / mean)
    if dist == "lognormal":
        mu = math.log(mean) - sigma**2 / 2
        return lambda x: normal_cdf((math.log(x) - mu) / sigma) if x > 0 else 0.0
    if dist == "pareto":
        scale = mean * (alpha - 1) / alpha
        return lambda x: 1.0 - (scale / x) ** alpha if x >= scale else 0.0
    raise AssertionError(dist)


def ks_distance(sample: list[float], cdf) -> float:
    """sqrt(n) times the largest gap between the sample's CDF and `cdf`."""
    xs = sorted(sample)
    n = len(xs)
    gap = max(max((i + 1) / n - cdf(x), cdf(x) - i / n) for i, x in enumerate(xs))
    return math.sqrt(n) * gap
