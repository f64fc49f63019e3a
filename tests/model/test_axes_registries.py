"""Every axis is one `Registry` (algorithms and per-create draws too), and the workload has one
lognormal: a lifetime and a per-create draw of the same mean and sigma draw the same values."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from harness.model.catalogue import MODEL_REGISTRIES
from harness.model.registry import Registry
from harness.model.scheduling.placement.algorithms import ALGORITHMS
from harness.model.workload.distributions import DRAWS, LIFETIMES
from harness.model.workload.templates import lifetime
from tests.support.configs import CONFIGS, scenario

ROOT = CONFIGS.parent


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


INSTALLED_LATER = """
import sys
from importlib import metadata
from pathlib import Path

from harness.model import registry

reads = []
read = metadata.entry_points
metadata.entry_points = lambda **select: reads.append(select) or read(**select)
site = Path(sys.argv[1])
sys.path.insert(0, str(site))
group = "herd_harness.scorers"
before = {ep.name for ep in registry.entry_points(group)}
registry.entry_points(group)
assert len(reads) == 1, reads  # the folders unchanged: not read again
(site / "late_plugin-1.0.dist-info").mkdir()
(site / "late_plugin-1.0.dist-info" / "METADATA").write_text("Name: late-plugin\\nVersion: 1.0\\n")
(site / "late_plugin-1.0.dist-info" / "entry_points.txt").write_text(
    "[herd_harness.scorers]\\nlate = late_plugin:Scorer\\n"
)
after = {ep.name for ep in registry.entry_points(group)}
assert len(reads) == 2 and after - before == {"late"}, (reads, before, after)
"""


def test_installed_plugins_are_read_once_until_a_package_is_installed(tmp_path):
    """A registry lists its installed plugins each time it is compared or iterated: the
    distributions' metadata is read again only once an import folder changed, as an install
    changes it. In a process of its own: the tests' registries see this project's plugins only
    (tests/conftest.py)."""
    code = subprocess.run(
        [sys.executable, "-c", INSTALLED_LATER, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert code.returncode == 0, code.stderr
