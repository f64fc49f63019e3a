"""Lifetime distributions by name (`LIFETIMES`, the key `lifetime_dist`): one file per
distribution, each a `Lifetime`. A package adds one under the entry-point group
`herd_harness.lifetimes`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.model.registry import Registry
from harness.model.workload.lifetimes.distribution import Lifetime, Never
from harness.model.workload.lifetimes.exponential import Exponential
from harness.model.workload.lifetimes.fixed import Fixed
from harness.model.workload.lifetimes.lognormal import LogNormal
from harness.model.workload.lifetimes.pareto import Pareto

if TYPE_CHECKING:
    from harness.model.workload.workload_keys import SandboxSpec

LIFETIMES = Registry("lifetimes", "lifetime", Lifetime, (Fixed, Exponential, LogNormal, Pareto))
"""Lifetime distributions by name (`lifetime_dist`)."""


def lifetime(spec: SandboxSpec) -> Lifetime | Never:
    """The lifetime distribution `spec` asks for, built."""
    if spec.lifetime_s is None:
        return Never()
    return LIFETIMES.resolve(spec.lifetime_dist)(spec)
