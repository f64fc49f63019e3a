"""Fault scenarios on the Ray engine (the same checks as the virtual engine's), and faults of
Ray itself: a node-group actor killed mid-run, the scheduler actor killed, the driver
interrupted. One embedded Ray for the module; runs are short (time_scale 0.1 mostly)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import ray

from actors.engine import RayEngine, RaySeedRun
from harness.config import load
from harness.engine import EngineError
from harness.ray_setup import connect
from harness.run_store import load_run
from harness.runner import run
from tests.conftest import CONFIGS
from tests.test_faults import EXPECT, FAULT_CONFIGS

FAST = {"run.time_scale": 0.1, "run.sample_interval_s": 0.0, "run.engine": "ray"}
SCALE = {"faults-slow-node": 0.15}
"""Slower where latencies are compared: engine overhead in model time grows as 1 / scale."""


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One Ray instance for the whole module: starting one costs seconds."""
    connect()
    yield
    ray.shutdown()


@pytest.mark.parametrize("name", FAULT_CONFIGS)
def test_fault_scenario_on_ray(name):
    config = load(CONFIGS / f"{name}.toml").with_values(
        {**FAST, "run.time_scale": SCALE.get(name, FAST["run.time_scale"])}
    )
    EXPECT[name](config, RayEngine().run_seed(config, 0))


@pytest.fixture
def seed_runs(monkeypatch):
    """Every RaySeedRun made during the test, so a test can reach its actors to kill one."""
    runs: list[RaySeedRun] = []
    init = RaySeedRun.__init__

    def spy(self, config, seed):
        init(self, config, seed)
        runs.append(self)

    monkeypatch.setattr(RaySeedRun, "__init__", spy)
    return runs


def killer(runs: list[RaySeedRun], at: float, actor: str):
    """A progress callback that kills the first actor of kind `actor` once `at` of the run
    has passed (the runner calls it on every poll of the driver)."""
    killed = []

    def progress(done, total, fraction, snapshot):
        if not killed and fraction >= at and runs:
            killed.append(getattr(runs[-1], actor)[0])
            ray.kill(killed[0], no_restart=False)

    return progress, killed


CHURN = {
    **FAST,
    "run.duration_s": 20.0,
    "run.time_scale": 0.25,
    "run.seeds": 1,
    "cluster.nodes": 10,
    "ray.node_groups": 2,
    "workload.lifetime_s": 6.0,
    "placement.strategy": "optimistic",
}


def test_a_node_group_process_killed_mid_run_is_restarted_and_the_run_goes_on(tmp_path, seed_runs):
    config = load(CONFIGS / "churn.toml").with_values(CHURN)
    progress, killed = killer(seed_runs, 0.4, "groups")
    out = run(config, ["optimistic"], tmp_path / "group", progress)
    assert killed
    meta, frames = load_run(out)
    assert meta["completed"] and all(c["ok"] for c in meta["invariants"])
    (s,) = frames["summary"].to_dict("records")
    assert s["fault_crashes"] == 5  # the group's nodes, 0-4
    # What the dead process held is not known: counted apart, not inferred from the requests
    # (which is what the invariant checks), and only on the group's own nodes.
    nodes = frames["nodes"]
    assert nodes["lost_unknown"].tolist() == [True] * 5 + [False] * 5
    assert s["unknown_sandboxes"] > 0 and s["invariants_ok"]
    assert nodes["lost"].sum() == s["lost_sandboxes"] == 0
    assert s["placed"] + s["failed"] == s["requests"]
    creates = frames["requests"].query("kind == 'create' and outcome == 'placed'")
    after = creates[creates.done_at > 0.4 * 20.0 + 2.0]
    assert (after.node_id < 5).any()  # the restarted group's nodes take sandboxes again


def test_the_scheduler_dying_ends_the_run_with_partial_results(tmp_path, seed_runs, capsys):
    config = load(CONFIGS / "churn.toml").with_values(CHURN)
    progress, killed = killer(seed_runs, 0.3, "replicas")
    out = tmp_path / "replica"
    with pytest.raises(EngineError, match="actor died"):
        run(config, ["optimistic"], out, progress)
    assert killed
    meta, frames = load_run(out)
    assert meta["completed"] is False and "actor died" in meta["error"]
    assert meta["partial"] == [["optimistic", 0]] and meta["finished"] == []
    assert len(frames["requests"]) > 0  # what had arrived before the death
    assert frames["summary"].empty  # half a seed is no summary row (nor checked)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_the_driver_flushes_and_marks_the_run_incomplete(tmp_path, signum):
    """(SIGTERM matters: ray.init installs a handler of its own that exits on the spot.)"""
    out = tmp_path / "signal"
    cmd = [sys.executable, "-m", "harness", "run", str(CONFIGS / "churn.toml"), "--engine", "ray"]
    cmd += ["--set", "run.duration_s=120", "--seeds", "1", "--quiet", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(CONFIGS.parent)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not (out / "run.json").exists() and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(5.0)  # run.json is written once Ray is up: actors up, then seconds of requests
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr.decode()[-2000:]
    assert b"Traceback" not in stderr
    meta, frames = load_run(out)
    assert meta["completed"] is False and meta["error"] == "interrupted"
    assert meta["partial"] == [["optimistic", 0]]  # the seed in progress, as far as it got
    assert len(frames["requests"]) > 0
