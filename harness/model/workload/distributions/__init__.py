"""Distributions by name, one file each, in two registries over one base (`Distribution`):
`LIFETIMES`, how long a sandbox lives (`lifetime_dist`), and `DRAWS`, how a sandbox's size or
lifetime is drawn per create around its template's (`<q>_draw`). `fixed` and `lognormal` are
in both. A package adds one under the entry-point group `herd_harness.lifetimes` or
`herd_harness.draws`."""

from __future__ import annotations

from harness.model.registry import Registry
from harness.model.workload.distributions.distribution import Distribution
from harness.model.workload.distributions.exponential import Exponential
from harness.model.workload.distributions.fixed import Fixed
from harness.model.workload.distributions.lognormal import LogNormal
from harness.model.workload.distributions.normal import Normal
from harness.model.workload.distributions.pareto import Pareto
from harness.model.workload.distributions.uniform import Uniform

LIFETIMES = Registry("lifetimes", "lifetime", Distribution, (Fixed, Exponential, LogNormal, Pareto))
"""Lifetime distributions by name (`lifetime_dist`), each with mean `lifetime_s`."""
DRAWS = Registry("draws", "draw", Distribution, (Fixed, Uniform, Normal, LogNormal))
"""Per-create draws by name (`<q>_draw`); `fixed` (the default) draws nothing."""

__all__ = ["DRAWS", "LIFETIMES", "Distribution"]
