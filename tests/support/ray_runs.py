"""Ray runs: a cluster of several nodes on this machine, the run's own time-keeping verdict read
before a band, a CPU hog beside a run."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from harness.results.seed_result import SeedResult
from harness.results.time_keeping import OVERLOADED, line, run_verdict


@contextlib.contextmanager
def ray_cluster(nodes: int = 2, driver_here: bool = True) -> Iterator[Any]:
    """A local Ray cluster of `nodes` nodes (one CPU each) for tests that join one with
    --address. A driver in this process (`driver_here`) must join it, not an instance another
    module started: the shared one, `local_ray`, is stopped first. One in a subprocess joins it
    whatever runs here, so the shared one is left up for the modules after."""
    import ray
    from ray.cluster_utils import Cluster

    from harness.engines.ray_setup import stop_ray

    if driver_here:
        stop_ray()
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        if driver_here:
            ray.shutdown()
        cluster.shutdown()


def skip_unless_kept_time(run: SeedResult | dict[str, Any] | pd.DataFrame, said: str = "") -> None:
    """A Ray run compared with the virtual engine is judged only on numbers it calls faithful:
    when its own time-keeping verdict (`harness.results.time_keeping`) is `overloaded`, the
    test skips with that verdict as the reason, neither failing a band on the machine's pace
    nor passing on numbers the run disowns. `run`: a seed's result, its summary row, or a
    run's summary frame; `said`, before the verdict in the reason."""
    summary = run.summary if isinstance(run, SeedResult) else run
    frame = summary if isinstance(summary, pd.DataFrame) else pd.DataFrame([summary])
    verdict = run_verdict(frame)
    assert verdict is not None, "not a run in real time: no time-keeping verdict"
    if verdict["verdict"] == OVERLOADED:
        pytest.skip(said + line(verdict))


@contextlib.contextmanager
def cpu_hog(processes: int | None = None) -> Iterator[list[int]]:
    """Busy loops beside a test, one per core unless told (a shared CI runner, a laptop in
    use): their process ids while the block runs; each ended by its id afterwards."""
    count = processes or os.cpu_count() or 1
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield [h.pid for h in hogs]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
