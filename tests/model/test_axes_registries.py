"""Every axis is one `Registry` (algorithms and per-create draws too), and the workload has one
lognormal: a lifetime and a per-create draw of the same mean and sigma draw the same values."""

from __future__ import annotations

import random

import pytest

from harness.model.catalogue import MODEL_REGISTRIES
from harness.model.registry import Registry
from harness.model.scheduling.placement.algorithms import ALGORITHMS
from harness.model.workload.distributions import DRAWS, LIFETIMES
from harness.model.workload.templates import lifetime
from tests.support.configs import scenario


@pytest.mark.parametrize("registry", [ALGORITHMS, DRAWS], ids=lambda r: r.axis)
def test_algorithms_and_draws_are_registries_listed_with_the_others(registry):
    assert isinstance(registry, Registry) and registry in MODEL_REGISTRIES
    assert registry.group == f"herd_harness.{registry.axis}"


def test_an_algorithm_by_import_path_is_taken_like_any_plugin():
    ref = "harness.model.scheduling.placement.algorithms:PowerOfTwo"
    config = scenario(placement={"algorithm": ref})
    assert ALGORITHMS[config.placement.algorithm].sampler == "two_choices"


def test_lifetimes_and_draws_share_one_fixed_and_one_lognormal():
    """A lifetime distribution and a per-create draw of the same name are one class: one
    design each, built from a mean and a spread."""
    for name in ("fixed", "lognormal"):
        assert LIFETIMES[name] is DRAWS[name]
    assert LIFETIMES.base is DRAWS.base


@pytest.mark.parametrize(("mean", "sigma"), [(30.0, 0.5), (2.0, 1.5)])
def test_one_lognormal_for_lifetimes_and_draws(mean, sigma):
    """A lognormal lifetime (sigma: `lifetime_sigma`) draws what the lognormal size draw of
    that spread draws, from the same stream."""
    spec = scenario(
        workload={"lifetime_s": mean, "lifetime_dist": "lognormal", "lifetime_sigma": sigma}
    ).workload.sandboxes[0]
    life = lifetime(spec)
    draw = DRAWS["lognormal"](mean, sigma)
    a, b = random.Random(7), random.Random(7)
    assert [life.draw(a) for _ in range(100)] == [draw.draw(b) for _ in range(100)]
