"""Every axis is one `Registry` (algorithms and per-create draws too), and the workload has one
lognormal: a lifetime and a per-create draw of the same mean and sigma draw the same values."""

from __future__ import annotations

import random

import pytest

from harness.model.catalogue import MODEL_REGISTRIES
from harness.model.registry import Registry
from harness.model.scheduling.placement.algorithms import ALGORITHMS
from harness.model.workload.lifetimes import LIFETIMES
from harness.model.workload.variety import DRAWS
from tests.support.configs import scenario


@pytest.mark.parametrize("registry", [ALGORITHMS, DRAWS], ids=lambda r: r.axis)
def test_algorithms_and_draws_are_registries_listed_with_the_others(registry):
    assert isinstance(registry, Registry) and registry in MODEL_REGISTRIES
    assert registry.group == f"herd_harness.{registry.axis}"


def test_an_algorithm_by_import_path_is_taken_like_any_plugin():
    ref = "harness.model.scheduling.placement.algorithms:PowerOfTwo"
    config = scenario(placement={"algorithm": ref})
    assert ALGORITHMS[config.placement.algorithm].sampler == "two_choices"


@pytest.mark.parametrize(("mean", "sigma"), [(30.0, 0.5), (2.0, 1.5)])
def test_one_lognormal_for_lifetimes_and_draws(mean, sigma):
    spec = scenario(
        workload={"lifetime_s": mean, "lifetime_dist": "lognormal", "lifetime_sigma": sigma}
    ).workload.sandboxes[0]
    lifetime = LIFETIMES["lognormal"](spec)
    draw = DRAWS["lognormal"](mean, sigma)
    a, b = random.Random(7), random.Random(7)
    assert [lifetime.draw(a) for _ in range(100)] == [draw.draw(b) for _ in range(100)]
