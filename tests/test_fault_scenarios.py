"""Every shipped fault scenario runs clean (exit 0: no broken invariant, no failed run) with 5
seeds under every strategy on the virtual engine, and under its own strategy on Ray."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.ledgers import LEDGERS
from tests.conftest import CONFIGS

FAULTS = sorted(CONFIGS.glob("faults-*.toml"))


@pytest.mark.parametrize("path", FAULTS, ids=lambda p: p.stem)
def test_every_strategy_runs_every_fault_scenario_clean(path, tmp_path) -> None:
    argv = ["run", str(path), "--seeds", "5", "--compare", ",".join(LEDGERS.builtins)]
    assert main([*argv, "--quiet", "--no-report", "--out", str(tmp_path / "out")]) == 0


@pytest.mark.parametrize("path", FAULTS, ids=lambda p: p.stem)
def test_every_fault_scenario_runs_clean_on_ray(path, tmp_path, local_ray) -> None:
    """Its own strategy, at a time scale that plays 30 s of model time in 1.5 s, on the
    shared Ray (tests/conftest.py), which `harness run` joins."""
    argv = ["run", str(path), "--engine", "ray", "--seeds", "5", "--set", "run.time_scale=0.05"]
    assert main([*argv, "--quiet", "--no-report", "--out", str(tmp_path / "out")]) == 0
