"""Fault scenarios on the Ray engine (the same checks as the virtual engine's), and faults of
Ray itself: a node-group actor killed mid-run, the scheduler actor killed, the driver
interrupted. One embedded Ray for the module; runs are short (time_scale 0.15)."""

from __future__ import annotations

import pytest
import ray

from harness.config import load
from harness.engine.ray import RayEngine, connect
from tests.conftest import CONFIGS
from tests.test_faults import EXPECT, FAULT_CONFIGS

FAST = {"run.time_scale": 0.15, "run.sample_interval_s": 0.0, "run.engine": "ray"}


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One Ray instance for the whole module: starting one costs seconds."""
    connect()
    yield
    ray.shutdown()


@pytest.mark.parametrize("name", FAULT_CONFIGS)
def test_fault_scenario_on_ray(name):
    config = load(CONFIGS / f"{name}.toml").with_values(FAST)
    EXPECT[name](config, RayEngine().run_seed(config, 0))
