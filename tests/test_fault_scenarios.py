"""Every shipped fault scenario runs clean (exit 0: no broken invariant, no failed run) with 5
seeds under every strategy on the virtual engine, and under its own strategy on Ray."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import harness.running.runner
from harness.cli import main
from harness.model.scheduling.ledgers import LEDGERS
from tests.helpers import CONFIGS

FAULTS = sorted(CONFIGS.glob("faults-*.toml"))


@pytest.mark.slow  # in the fast tier the golden digests (invariants_ok among them) cover 2 seeds
@pytest.mark.parametrize("path", FAULTS, ids=lambda p: p.stem)
def test_every_strategy_runs_every_fault_scenario_clean(path, tmp_path) -> None:
    argv = ["run", str(path), "--seeds", "5", "--compare", ",".join(LEDGERS.builtins)]
    assert main([*argv, "--quiet", "--no-report", "--out", str(tmp_path / "out")]) == 0


class Kept:
    """The engine `harness run` gets here: the module's RayEngine, which the end of a run
    (`close`) leaves up. The engine still builds its actors anew after a seed that failed or
    wore them (`RayEngine.run_seed`)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.name = engine.name

    def prepare(self, *args: Any) -> None:
        self.engine.prepare(*args)

    def run_seed(self, *args: Any, **kwargs: Any) -> Any:
        return self.engine.run_seed(*args, **kwargs)

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def ray_engine(local_ray: None) -> Iterator[Kept]:
    """One set of Ray actors for the five scenarios: they share a layout (as in
    tests/test_ray_faults.py), and starting one costs seconds; reset for every seed."""
    from actors.engine import RayEngine

    engine = RayEngine()
    yield Kept(engine)
    engine.close()


@pytest.mark.ray
@pytest.mark.parametrize("path", FAULTS, ids=lambda p: p.stem)
def test_every_fault_scenario_runs_clean_on_ray(path, tmp_path, ray_engine, monkeypatch) -> None:
    """Its own strategy, at a time scale that plays 30 s of model time in 1.5 s, on the
    shared Ray (tests/conftest.py), which `harness run` joins, and the module's actors."""
    monkeypatch.setattr(harness.running.runner, "get_engine", lambda name: ray_engine)
    argv = ["run", str(path), "--engine", "ray", "--seeds", "5", "--set", "run.time_scale=0.05"]
    assert main([*argv, "--quiet", "--no-report", "--out", str(tmp_path / "out")]) == 0
