"""Every shipped fault scenario runs clean (exit 0: no broken invariant, no failed run) with 5
seeds under every strategy on the virtual engine (on Ray: tests/engines/test_conformance.py, which
runs each scenario's own checks on its Ray seed)."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.model.scheduling.strategies import STRATEGIES
from tests.support.configs import CONFIGS
from tests.support.faults import FAULT_CONFIGS


@pytest.mark.slow  # in the fast tier the golden digests (invariants_ok among them) cover 2 seeds
@pytest.mark.parametrize("name", FAULT_CONFIGS)
def test_every_strategy_runs_every_fault_scenario_clean(name, tmp_path) -> None:
    argv = ["run", str(CONFIGS / f"{name}.toml"), "--seeds", "5"]
    argv += ["--compare", ",".join(STRATEGIES.builtins)]
    assert main([*argv, "--quiet", "--no-report", "--out", str(tmp_path / "out")]) == 0
