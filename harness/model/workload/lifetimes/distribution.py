"""What a lifetime distribution is (`Lifetime`): how long a sandbox lives before its kill.

Every distribution is parameterised by its mean, `lifetime_s`, so that changing the shape of
the lifetimes keeps the load a workload offers (arrival rate x mean lifetime) the same. Those
with a shape take one more key (`lognormal`: `lifetime_sigma`; `pareto`: `lifetime_alpha`).
Each is built once per template and then only draws.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, ClassVar

from mypy_extensions import mypyc_attr

if TYPE_CHECKING:
    from harness.model.workload.workload_keys import SandboxSpec


def mean_of(spec: SandboxSpec) -> float:
    """`lifetime_s`, which is set for every distribution but `Never`."""
    if spec.lifetime_s is None:
        raise ValueError("lifetime_s is none: sandboxes are never killed (Never)")
    return spec.lifetime_s


@mypyc_attr(allow_interpreted_subclasses=True)
class Lifetime:
    """A lifetime distribution (`lifetime_dist`), built from a sandbox's keys; registered by
    name in `harness.model.workload.lifetimes.LIFETIMES`."""

    name: ClassVar[str] = ""
    exact: ClassVar[bool] = False
    """Whether every sandbox lives exactly the mean: an estimate then needs no distribution
    (`harness.wiring.demand_estimate`); the others are estimated as exponential."""

    def __init__(self, spec: SandboxSpec) -> None:
        self.mean = mean_of(spec)

    def draw(self, rng: random.Random) -> float | None:
        """Seconds the next sandbox lives; None: never killed."""
        raise NotImplementedError


class Never:
    """`lifetime_s = "none"`: the sandbox is never killed; nothing is drawn. Not a registered
    distribution: no `lifetime_dist` names it."""

    def draw(self, rng: random.Random) -> None:
        return None
